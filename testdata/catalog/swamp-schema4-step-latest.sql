-- Variant of swamp-schema4.sql for the newer catalog of swamp-format.md §11: the same
-- schema_version "4" DDL plus the is_step_latest column (one row per
-- (namespace, type_normalized, model_id, data_name, workflow_name, job_name, step_name)
-- group has is_step_latest = 1). The column's exact position and definition in swamp are not
-- documented; this fixture appends it after `source`.

CREATE TABLE IF NOT EXISTS catalog_meta (
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
);

CREATE TABLE IF NOT EXISTS catalog (
  namespace       TEXT NOT NULL DEFAULT '',
  type_normalized TEXT NOT NULL,
  model_id        TEXT NOT NULL,
  data_name       TEXT NOT NULL,
  id              TEXT NOT NULL,
  version         INTEGER NOT NULL,
  is_latest       INTEGER NOT NULL DEFAULT 1,
  model_name      TEXT NOT NULL,
  spec_name       TEXT NOT NULL DEFAULT '',
  data_type       TEXT NOT NULL DEFAULT '',
  content_type    TEXT NOT NULL DEFAULT '',
  lifetime        TEXT NOT NULL DEFAULT '',
  owner_type      TEXT NOT NULL DEFAULT '',
  streaming       INTEGER NOT NULL DEFAULT 0,
  size            INTEGER NOT NULL DEFAULT 0,
  created_at      TEXT NOT NULL,
  tags            TEXT NOT NULL DEFAULT '{}',
  owner_ref       TEXT NOT NULL DEFAULT '',
  workflow_run_id TEXT NOT NULL DEFAULT '',
  workflow_name   TEXT NOT NULL DEFAULT '',
  job_name        TEXT NOT NULL DEFAULT '',
  step_name       TEXT NOT NULL DEFAULT '',
  source          TEXT NOT NULL DEFAULT '',
  is_step_latest  INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (namespace, type_normalized, model_id, data_name, version)
);

CREATE INDEX IF NOT EXISTS idx_catalog_model_name      ON catalog(model_name);
CREATE INDEX IF NOT EXISTS idx_catalog_spec_name       ON catalog(spec_name);
CREATE INDEX IF NOT EXISTS idx_catalog_data_type       ON catalog(data_type);
CREATE INDEX IF NOT EXISTS idx_catalog_created_at      ON catalog(created_at);
CREATE INDEX IF NOT EXISTS idx_catalog_workflow_run_id ON catalog(workflow_run_id);
CREATE INDEX IF NOT EXISTS idx_catalog_step_name       ON catalog(step_name);
CREATE INDEX IF NOT EXISTS idx_namespace               ON catalog(namespace);
CREATE INDEX IF NOT EXISTS idx_catalog_is_latest       ON catalog(namespace, type_normalized, model_id, data_name, is_latest);
CREATE INDEX IF NOT EXISTS idx_catalog_latest_lookup ON catalog(model_name, data_name, is_latest, namespace);

INSERT OR REPLACE INTO catalog_meta (key, value) VALUES ('schema_version', '4');
DELETE FROM catalog_meta WHERE key = 'populated';
