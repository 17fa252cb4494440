package bucket

// Reading the bucket itself, not the cache's copy of its index: every
// object under the datastore's prefix (its key, size and content hash) and
// the body of one object, with the same clients and credentials as the
// bucket lock.

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/swampj/swampj/ops/remote/bucketwire"
)

func (c *s3Client) list(ctx context.Context, under string) (map[string]bucketwire.Object, error) {
	base := c.key("")
	p := s3.NewListObjectsV2Paginator(c.api, &s3.ListObjectsV2Input{Bucket: aws.String(c.cfg.Bucket), Prefix: aws.String(base + under)})
	out := map[string]bucketwire.Object{}
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, c.classify("LIST", base+under, err)
		}
		for _, o := range page.Contents {
			rel := strings.TrimPrefix(aws.ToString(o.Key), base)
			out[rel] = bucketwire.Object{Size: aws.ToInt64(o.Size), Hash: strings.Trim(aws.ToString(o.ETag), `"`)}
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
