package remote

// Reading the bucket itself, not the cache's copy of its index: every
// object under the datastore's prefix (its key, size and content hash) and
// the body of one object, over S3 and over the GCS JSON API, with the same
// clients and credentials as the bucket lock.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
)

// BucketObject is one object of the bucket as a listing shows it: Hash is
// the S3 ETag or the GCS MD5 hash, so a rewrite with the same bytes keeps it.
type BucketObject struct {
	Size int64  `json:"size"`
	Hash string `json:"hash"`
}

// bucketReader lists and reads the datastore's objects, by key relative to
// the configured prefix.
type bucketReader interface {
	list(ctx context.Context, under string) (map[string]BucketObject, error)
	get(ctx context.Context, rel string) ([]byte, bool, error)
}

// newBucketReader is the reader of c's datastore kind.
func newBucketReader(ctx context.Context, c *Cache, env func(string) string) (bucketReader, error) {
	if c.GCS != nil {
		return newGCSClient(*c.GCS, env, nil)
	}
	return newS3Client(ctx, c.S3, BucketLocker{})
}

func (c *s3Client) list(ctx context.Context, under string) (map[string]BucketObject, error) {
	base := c.key("")
	p := s3.NewListObjectsV2Paginator(c.api, &s3.ListObjectsV2Input{Bucket: aws.String(c.cfg.Bucket), Prefix: aws.String(base + under)})
	out := map[string]BucketObject{}
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, c.classify("LIST", base+under, err)
		}
		for _, o := range page.Contents {
			rel := strings.TrimPrefix(aws.ToString(o.Key), base)
			out[rel] = BucketObject{Size: aws.ToInt64(o.Size), Hash: strings.Trim(aws.ToString(o.ETag), `"`)}
		}
	}
	return out, nil
}

func (c *s3Client) get(ctx context.Context, rel string) ([]byte, bool, error) {
	out, err := c.api.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(c.cfg.Bucket), Key: aws.String(c.key(rel))})
	if err != nil {
		var ae smithy.APIError
		if (errors.As(err, &ae) && ae.ErrorCode() == "NoSuchKey") || httpStatus(err) == http.StatusNotFound && !isNoBucket(err) {
			return nil, false, nil
		}
		return nil, false, c.classify("GET", rel, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	return b, err == nil, err
}

func (c *gcsClient) list(ctx context.Context, under string) (map[string]BucketObject, error) {
	base := c.objectName("")
	out := map[string]BucketObject{}
	token := ""
	for {
		q := url.Values{"prefix": {base + under}, "fields": {"items(name,size,md5Hash,generation),nextPageToken"}}
		if token != "" {
			q.Set("pageToken", token)
		}
		r, err := c.do(ctx, http.MethodGet, c.base+"/storage/v1/b/"+url.PathEscape(c.cfg.Bucket)+"/o?"+q.Encode(), nil)
		if err != nil {
			return nil, err
		}
		if r.status != http.StatusOK {
			return nil, fmt.Errorf("listing %s: HTTP %d: %s", base+under, r.status, snippet(r.body))
		}
		var page struct {
			Items []struct {
				Name       string `json:"name"`
				Size       string `json:"size"`
				MD5Hash    string `json:"md5Hash"`
				Generation string `json:"generation"`
			} `json:"items"`
			NextPageToken string `json:"nextPageToken"`
		}
		if err := json.Unmarshal(r.body, &page); err != nil {
			return nil, fmt.Errorf("listing %s: %v", base+under, err)
		}
		for _, o := range page.Items {
			size, _ := strconv.ParseInt(o.Size, 10, 64)
			h := o.MD5Hash
			if h == "" {
				h = "generation " + o.Generation
			}
			out[strings.TrimPrefix(o.Name, base)] = BucketObject{Size: size, Hash: h}
		}
		if page.NextPageToken == "" {
			return out, nil
		}
		token = page.NextPageToken
	}
}

func (c *gcsClient) get(ctx context.Context, rel string) ([]byte, bool, error) {
	r, err := c.do(ctx, http.MethodGet, c.objectURL(rel, url.Values{"alt": {"media"}}), nil)
	if err != nil {
		return nil, false, err
	}
	switch r.status {
	case http.StatusOK:
		return r.body, true, nil
	case http.StatusNotFound:
		return nil, false, nil
	}
	return nil, false, fmt.Errorf("GET %s: HTTP %d: %s", rel, r.status, snippet(r.body))
}
