package remote

// Credentials for the GCS lock when no emulator is configured: the sources
// the extension reads (gcs_client.ts getAccessToken), in its order.
//
//  1. GOOGLE_APPLICATION_CREDENTIALS: a service_account key or an
//     authorized_user file;
//  2. gcloud's ADC file, $HOME/.config/gcloud/application_default_credentials.json
//     (what 'gcloud auth application-default login' writes);
//  3. the metadata server of the machine (GCE, GKE, Cloud Run).
//
// Written against golang.org/x/oauth2 and its jwt package rather than
// golang.org/x/oauth2/google, whose packages' init work (external-account
// patterns, the metadata client) would run at every start of swampj.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/jwt"
)

const (
	gcsScope         = "https://www.googleapis.com/auth/devstorage.read_write"
	googleTokenURL   = "https://oauth2.googleapis.com/token"
	gceMetadataHost  = "metadata.google.internal"
	gceTokenPath     = "/computeMetadata/v1/instance/service-accounts/default/token"
	credentialsHint  = "set GOOGLE_APPLICATION_CREDENTIALS or run 'gcloud auth application-default login'"
	metadataDeadline = 5 * time.Second
)

// gcsTokenSource finds the Application Default Credentials.
func gcsTokenSource(env func(string) string) (oauth2.TokenSource, error) {
	if p := env("GOOGLE_APPLICATION_CREDENTIALS"); p != "" {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("GOOGLE_APPLICATION_CREDENTIALS: %w", err)
		}
		return tokenSourceFromJSON(p, data)
	}
	home := env("HOME")
	if home == "" {
		home = env("USERPROFILE")
	}
	if home != "" {
		p := filepath.Join(home, ".config", "gcloud", "application_default_credentials.json")
		data, err := os.ReadFile(p)
		if err == nil {
			return tokenSourceFromJSON(p, data)
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	host := env("GCE_METADATA_HOST")
	if host == "" {
		host = gceMetadataHost
	}
	return oauth2.ReuseTokenSource(nil, metadataTokenSource{url: "http://" + host + gceTokenPath}), nil
}

// tokenSourceFromJSON reads a credentials file of path.
func tokenSourceFromJSON(path string, data []byte) (oauth2.TokenSource, error) {
	var f struct {
		Type         string `json:"type"`
		ClientEmail  string `json:"client_email"`
		PrivateKey   string `json:"private_key"`
		PrivateKeyID string `json:"private_key_id"`
		TokenURI     string `json:"token_uri"`
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
		RefreshToken string `json:"refresh_token"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("%s does not parse: %w", path, err)
	}
	ctx := context.Background() // the token requests outlive the call: the heartbeat renews with them
	switch f.Type {
	case "service_account":
		tokenURL := f.TokenURI
		if tokenURL == "" {
			tokenURL = googleTokenURL
		}
		cfg := &jwt.Config{Email: f.ClientEmail, PrivateKey: []byte(f.PrivateKey), PrivateKeyID: f.PrivateKeyID,
			Scopes: []string{gcsScope}, TokenURL: tokenURL}
		return cfg.TokenSource(ctx), nil
	case "authorized_user":
		cfg := &oauth2.Config{ClientID: f.ClientID, ClientSecret: f.ClientSecret,
			Endpoint: oauth2.Endpoint{TokenURL: googleTokenURL, AuthStyle: oauth2.AuthStyleInParams}, Scopes: []string{gcsScope}}
		return cfg.TokenSource(ctx, &oauth2.Token{RefreshToken: f.RefreshToken}), nil
	}
	return nil, fmt.Errorf("%s: credential type %q: swampj reads service_account and authorized_user files, as the extension does", path, f.Type)
}

// metadataTokenSource asks the machine's metadata server for the attached
// service account's token.
type metadataTokenSource struct{ url string }

func (m metadataTokenSource) Token() (*oauth2.Token, error) {
	ctx, cancel := context.WithTimeout(context.Background(), metadataDeadline)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Metadata-Flavor", "Google")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("no GCS credentials: no GOOGLE_APPLICATION_CREDENTIALS, no gcloud ADC file, and the metadata server did not answer (%v); %s", err, credentialsHint)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("the metadata server's token: HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(body)))
	}
	var t struct {
		AccessToken string `json:"access_token"`
		ExpiresIn   int64  `json:"expires_in"`
		TokenType   string `json:"token_type"`
	}
	if err := json.Unmarshal(body, &t); err != nil || t.AccessToken == "" {
		return nil, fmt.Errorf("the metadata server's token does not parse: %s", snippet(body))
	}
	return &oauth2.Token{AccessToken: t.AccessToken, TokenType: t.TokenType, Expiry: time.Now().Add(time.Duration(t.ExpiresIn) * time.Second)}, nil
}
