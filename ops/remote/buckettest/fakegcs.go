package buckettest

import (
	"crypto/md5"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"hash/crc32"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// GCSObject is one object of a FakeGCS: its bytes, generation and
// update time.
type GCSObject struct {
	Data    []byte
	Gen     int64
	Updated time.Time
}

// FakeGCS is the part of the GCS JSON API the lock speaks: media and
// multipart upload with ifGenerationMatch, object metadata and media GET, conditional
// DELETE. It answers 412 whenever a precondition does not hold.
type FakeGCS struct {
	mu      sync.Mutex
	Bucket  string
	objs    map[string]*GCSObject
	nextGen int64
	auth    []string // Authorization headers seen
	srv     *httptest.Server
}

// NewFakeGCS serves a fake of bucket on loopback until the test ends.
func NewFakeGCS(t testing.TB, bucket string) *FakeGCS {
	f := &FakeGCS{Bucket: bucket, objs: map[string]*GCSObject{}, nextGen: 1000}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

// genMatch reports whether ifGenerationMatch (if given) holds for o.
func genMatch(q string, o *GCSObject) bool {
	if q == "" {
		return true
	}
	g, err := strconv.ParseInt(q, 10, 64)
	if err != nil {
		return false
	}
	if g == 0 {
		return o == nil
	}
	return o != nil && o.Gen == g
}

func (f *FakeGCS) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if a := r.Header.Get("Authorization"); a != "" {
		f.auth = append(f.auth, a)
	}
	q := r.URL.Query()
	upload := "/upload/storage/v1/b/" + f.Bucket + "/o"
	objPrefix := "/storage/v1/b/" + f.Bucket + "/o/"
	resource := func(name string, o *GCSObject) {
		w.Header().Set("Content-Type", "application/json")
		crc := binary.BigEndian.AppendUint32(nil, crc32.Checksum(o.Data, crc32.MakeTable(crc32.Castagnoli)))
		sum := md5.Sum(o.Data)
		_ = json.NewEncoder(w).Encode(map[string]string{"name": name, "bucket": f.Bucket, "generation": strconv.FormatInt(o.Gen, 10),
			"updated": o.Updated.UTC().Format(time.RFC3339Nano), "size": strconv.Itoa(len(o.Data)),
			"crc32c": base64.StdEncoding.EncodeToString(crc), "md5Hash": base64.StdEncoding.EncodeToString(sum[:])})
	}
	switch {
	case r.Method == http.MethodPost && r.URL.Path == upload:
		name, data, err := uploaded(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if !genMatch(q.Get("ifGenerationMatch"), f.objs[name]) {
			http.Error(w, `{"error":{"code":412}}`, http.StatusPreconditionFailed)
			return
		}
		f.nextGen++
		o := &GCSObject{Data: data, Gen: f.nextGen, Updated: time.Now()}
		f.objs[name] = o
		resource(name, o)
	case strings.HasPrefix(r.URL.Path, objPrefix):
		name := strings.TrimPrefix(r.URL.Path, objPrefix) // net/http decodes %2F
		o := f.objs[name]
		switch r.Method {
		case http.MethodGet:
			if o == nil {
				http.Error(w, `{"error":{"code":404}}`, http.StatusNotFound)
				return
			}
			if q.Get("alt") == "media" {
				w.Header().Set("x-goog-generation", strconv.FormatInt(o.Gen, 10))
				_, _ = w.Write(o.Data)
				return
			}
			resource(name, o)
		case http.MethodDelete:
			if o == nil {
				http.Error(w, `{"error":{"code":404}}`, http.StatusNotFound)
				return
			}
			if !genMatch(q.Get("ifGenerationMatch"), o) {
				http.Error(w, `{"error":{"code":412}}`, http.StatusPreconditionFailed)
				return
			}
			delete(f.objs, name)
			w.WriteHeader(http.StatusNoContent)
		default:
			http.Error(w, "method", http.StatusMethodNotAllowed)
		}
	default:
		http.Error(w, "not found: "+r.URL.String(), http.StatusNotFound)
	}
}

// uploaded is the object name and body of a media upload (the name in the
// query) or a multipart one (the name in the metadata part), as the JSON
// API takes them.
func uploaded(r *http.Request) (string, []byte, error) {
	if r.URL.Query().Get("uploadType") != "multipart" {
		data, err := io.ReadAll(r.Body)
		return r.URL.Query().Get("name"), data, err
	}
	_, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil {
		return "", nil, err
	}
	mr := multipart.NewReader(r.Body, params["boundary"])
	meta, err := mr.NextPart()
	if err != nil {
		return "", nil, err
	}
	var m struct {
		Name string `json:"name"`
	}
	if err := json.NewDecoder(meta).Decode(&m); err != nil {
		return "", nil, err
	}
	media, err := mr.NextPart()
	if err != nil {
		return "", nil, err
	}
	data, err := io.ReadAll(media)
	return m.Name, data, err
}

// Object is name's live copy (nil when absent).
func (f *FakeGCS) Object(name string) *GCSObject {
	f.mu.Lock()
	defer f.mu.Unlock()
	if o := f.objs[name]; o != nil {
		c := *o
		return &c
	}
	return nil
}

// Steal replaces name as another process taking the lock over would: a new
// generation with another holder's body.
func (f *FakeGCS) Steal(name string, updated time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nextGen++
	f.objs[name] = &GCSObject{Data: []byte(`{"holder":"other@elsewhere","pid":4242,"ttlMs":30000,"nonce":"theirs"}`), Gen: f.nextGen, Updated: updated}
}

// URL is the fake's endpoint (a datastore config's apiEndpoint).
func (f *FakeGCS) URL() string { return f.srv.URL }

// Auth is the Authorization headers the fake has seen.
func (f *FakeGCS) Auth() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.auth...)
}

// Writes is how many objects the fake has created or replaced.
func (f *FakeGCS) Writes() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return int(f.nextGen - 1000)
}
