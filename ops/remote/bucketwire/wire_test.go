package bucketwire_test

import (
	"encoding/json"
	"testing"

	"github.com/swampj/swampj/ops/remote/bucketwire"
)

// The line protocol is spoken by two programs that may be built from
// different commits (swampj and the swampj-bucket beside it): its JSON
// names are fixed here, so a rename shows up as a failing test, not as a
// field the other end silently drops.
func TestWireNamesAreStable(t *testing.T) {
	for _, c := range []struct {
		v    any
		want string
	}{
		{bucketwire.Request{ID: 1, Op: bucketwire.OpLock, Kind: bucketwire.KindGCS, Config: []byte("{}"), PID: 7, Client: 2, Key: "k",
			TimeoutMs: 3, Handle: 4, Under: "u", Rel: "r", Target: 5},
			`{"id":1,"op":"lock","kind":"gcs","config":"e30=","pid":7,"client":2,"key":"k","timeoutMs":3,"handle":4,"under":"u","rel":"r","target":5}`},
		{bucketwire.Response{ID: 1, Client: 2, Handle: 3, Objects: map[string]bucketwire.Object{"a": {Size: 1, Hash: "h"}}, Data: []byte("x"), Found: true,
			Err: &bucketwire.Error{Kind: bucketwire.ErrAccess, Access: bucketwire.AccessNoBucket, Bucket: "b", Endpoint: "e", Message: "m"}},
			`{"id":1,"client":2,"handle":3,"objects":{"a":{"size":1,"hash":"h"}},"data":"eA==","found":true,"error":{"kind":"access","access":"remote_bucket_not_found","bucket":"b","endpoint":"e","message":"m"}}`},
		{bucketwire.LockInfo{Holder: "h", Hostname: "n", PID: 1, AcquiredAt: "t", TTLMs: 30000, Nonce: "x"},
			`{"holder":"h","hostname":"n","pid":1,"acquiredAt":"t","ttlMs":30000,"nonce":"x"}`},
	} {
		b, err := json.Marshal(c.v)
		if err != nil || string(b) != c.want {
			t.Errorf("%T:\n got %s (%v)\nwant %s", c.v, b, err, c.want)
		}
	}
}
