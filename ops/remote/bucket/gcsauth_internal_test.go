package remote

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The credentials the GCS lock uses outside an emulator, each against a
// token endpoint on loopback.

func TestGCSCredentialsServiceAccount(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	var scope string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		if r.Form.Get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer" {
			http.Error(w, "grant_type", http.StatusBadRequest)
			return
		}
		parts := strings.Split(r.Form.Get("assertion"), ".")
		if len(parts) == 3 {
			claims, _ := base64.RawURLEncoding.DecodeString(parts[1])
			var c struct {
				Scope string `json:"scope"`
			}
			_ = json.Unmarshal(claims, &c)
			scope = c.Scope
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"access_token":"sa-token","token_type":"Bearer","expires_in":3600}`))
	}))
	defer srv.Close()
	pk := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: must(x509.MarshalPKCS8PrivateKey(key))})
	file, _ := json.Marshal(map[string]string{"type": "service_account", "client_email": "swampj@example.iam.gserviceaccount.com",
		"private_key": string(pk), "private_key_id": "k1", "token_uri": srv.URL})
	p := filepath.Join(t.TempDir(), "sa.json")
	if err := os.WriteFile(p, file, 0o600); err != nil {
		t.Fatal(err)
	}
	ts, err := gcsTokenSource(func(k string) string {
		return map[string]string{"GOOGLE_APPLICATION_CREDENTIALS": p, "HOME": "/nonexistent"}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := ts.Token()
	if err != nil || tok.AccessToken != "sa-token" {
		t.Fatalf("token %+v: %v", tok, err)
	}
	if scope != gcsScope {
		t.Errorf("scope %q, want %q", scope, gcsScope)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestGCSCredentialsMetadataServer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Metadata-Flavor") != "Google" || r.URL.Path != gceTokenPath {
			http.Error(w, "no", http.StatusForbidden)
			return
		}
		_, _ = w.Write([]byte(`{"access_token":"md-token","token_type":"Bearer","expires_in":3599}`))
	}))
	defer srv.Close()
	home := t.TempDir() // no gcloud ADC file in it
	ts, err := gcsTokenSource(func(k string) string {
		return map[string]string{"HOME": home, "GCE_METADATA_HOST": strings.TrimPrefix(srv.URL, "http://")}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	if tok, err := ts.Token(); err != nil || tok.AccessToken != "md-token" {
		t.Fatalf("token %+v: %v", tok, err)
	}
}

func TestGCSCredentialsGcloudFile(t *testing.T) {
	home := t.TempDir()
	p := filepath.Join(home, ".config", "gcloud", "application_default_credentials.json")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	env := func(k string) string { return map[string]string{"HOME": home}[k] }
	if err := os.WriteFile(p, []byte(`{"type":"external_account"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := gcsTokenSource(env); err == nil || !strings.Contains(err.Error(), `"external_account"`) {
		t.Fatalf("an unsupported type: %v", err)
	}
	if err := os.WriteFile(p, []byte(`{"type":"authorized_user","client_id":"c","client_secret":"s","refresh_token":"r"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if ts, err := gcsTokenSource(env); err != nil || ts == nil {
		t.Fatalf("authorized_user: %v", err)
	}
}
