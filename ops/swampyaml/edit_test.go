package swampyaml

import (
	"errors"
	"testing"
)

// The two byte-exact files of swamp-format §1.2.1.
const (
	markerAfterInit = `swampVersion: 20261022.021804.0-sha.983e2929
initializedAt: "2026-08-01T12:00:00.000Z"
repoId: 5b0c9e2a-7f4d-4e1b-9a3c-2d8e6f1a0b7c
tools:
  - claude
gitignoreManaged: true
`
	markerAfterSetInfra = `swampVersion: 20261022.021804.0-sha.983e2929
initializedAt: "2026-08-01T12:00:00.000Z"
repoId: 5b0c9e2a-7f4d-4e1b-9a3c-2d8e6f1a0b7c
tools:
  - claude
gitignoreManaged: true
datastore:
  type: filesystem
  path: /home/alice/work/repo/.swamp
  namespace: infra
`
	repoDir = "/home/alice/work/repo"
)

func TestEditNamespace(t *testing.T) {
	cases := []struct {
		name, src, ns, want string
	}{
		{"doc example: set on a default repo", markerAfterInit, "infra", markerAfterSetInfra},
		{"re-serialising unchanged input is stable", markerAfterSetInfra, "infra", markerAfterSetInfra},
		{"unset keeps the block set created", markerAfterSetInfra, "", `swampVersion: 20261022.021804.0-sha.983e2929
initializedAt: "2026-08-01T12:00:00.000Z"
repoId: 5b0c9e2a-7f4d-4e1b-9a3c-2d8e6f1a0b7c
tools:
  - claude
gitignoreManaged: true
datastore:
  type: filesystem
  path: /home/alice/work/repo/.swamp
`},
		{"set replaces in place", `datastore:
  type: filesystem
  namespace: old
  path: /srv/swamp
autoGc: true
`, "prod", `datastore:
  type: filesystem
  namespace: prod
  path: /srv/swamp
autoGc: true
`},
		{"doc example 3: flow lists become block lists, comment dropped", `datastore:
  type: filesystem
  path: $HOME/shared/swamp-data            # $VAR, ${VAR}, leading ~ are expanded
  namespace: infra
  directories: [data, outputs, workflow-runs]
  exclude: ["telemetry/**"]
`, "prod", `datastore:
  type: filesystem
  path: $HOME/shared/swamp-data
  namespace: prod
  directories:
    - data
    - outputs
    - workflow-runs
  exclude:
    - telemetry/**
`},
		{"existing block without namespace gets it appended", "datastore:\n  type: filesystem\n  path: /srv/swamp\n", "infra",
			"datastore:\n  type: filesystem\n  path: /srv/swamp\n  namespace: infra\n"},
		{"numeric-looking slug is double-quoted", markerAfterInit, "007", markerAfterInit +
			"datastore:\n  type: filesystem\n  path: /home/alice/work/repo/.swamp\n  namespace: \"007\"\n"},
		{"YAML 1.1 boolean slug stays single-quoted", markerAfterInit, "yes", markerAfterInit +
			"datastore:\n  type: filesystem\n  path: /home/alice/work/repo/.swamp\n  namespace: 'yes'\n"},
		{"null datastore is replaced in place", "datastore:\nrepoId: x\n", "infra",
			"datastore:\n  type: filesystem\n  path: /home/alice/work/repo/.swamp\n  namespace: infra\nrepoId: x\n"},
		{"unquoted timestamp goes through the JSON round trip", "initializedAt: 2026-08-01T12:00:00Z\nupgradedAt: '2026-08-02'\nlogLevel: ''\n", "infra",
			"initializedAt: \"2026-08-01T12:00:00.000Z\"\nupgradedAt: \"2026-08-02\"\nlogLevel: ''\n" +
				"datastore:\n  type: filesystem\n  path: /home/alice/work/repo/.swamp\n  namespace: infra\n"},
		{"unknown keys, numbers and nested config survive", `swampVersion: "1.0"
telemetryKeepFlushed: 5
custom:
  nested: {a: 1, b: [x]}
  text: "line1\nline2"
datastore:
  type: "@swamp/s3-datastore"
  config:
    bucket: my-bucket
    region: us-east-1
`, "infra", `swampVersion: "1.0"
telemetryKeepFlushed: 5
custom:
  nested:
    a: 1
    b:
      - x
  text: |-
    line1
    line2
datastore:
  type: "@swamp/s3-datastore"
  config:
    bucket: my-bucket
    region: us-east-1
  namespace: infra
`},
		{"legacy tool is promoted and dropped", "swampVersion: x\ntool: cursor\nlogLevel: info\n", "infra",
			"swampVersion: x\nlogLevel: info\ntools:\n  - cursor\n" +
				"datastore:\n  type: filesystem\n  path: /home/alice/work/repo/.swamp\n  namespace: infra\n"},
		{"legacy tool dropped when tools exists", "tools: [claude]\ntool: cursor\n", "infra",
			"tools:\n  - claude\n" +
				"datastore:\n  type: filesystem\n  path: /home/alice/work/repo/.swamp\n  namespace: infra\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := EditNamespace([]byte(c.src), repoDir, c.ns)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != c.want {
				t.Errorf("got\n%s\nwant\n%s", got, c.want)
			}
		})
	}
}

func TestEditNamespaceErrors(t *testing.T) {
	cases := []struct {
		name, src, repo, ns string
		is                  error
	}{
		{"unset without datastore", markerAfterInit, repoDir, "", ErrNoNamespace},
		{"unset without namespace", "datastore:\n  type: filesystem\n  path: /x\n", repoDir, "", ErrNoNamespace},
		{"unset with null datastore", "datastore: ~\n", repoDir, "", ErrNoNamespace},
		{"does not parse", "swampVersion: [unclosed\n", repoDir, "infra", nil},
		{"tab indentation", "datastore:\n\ttype: filesystem\n", repoDir, "infra", nil},
		{"duplicate key", "a: 1\na: 2\n", repoDir, "infra", nil},
		{"not a mapping", "- a\n- b\n", repoDir, "infra", nil},
		{"empty file", "", repoDir, "infra", nil},
		{"datastore is a string", "datastore: filesystem\n", repoDir, "infra", nil},
		{"removed key", "defaultDriver: docker\n", repoDir, "infra", nil},
		{"relative repo dir", markerAfterInit, "work/repo", "infra", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := EditNamespace([]byte(c.src), c.repo, c.ns)
			if err == nil {
				t.Fatalf("no error; output %q", out)
			}
			if c.is != nil && !errors.Is(err, c.is) {
				t.Errorf("error %v, want %v", err, c.is)
			}
		})
	}
}
