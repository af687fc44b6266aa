// Package storeurl opens the objstore.Store a user's checkpoint setting
// names. It is apart from objstore so that objstore (the interface) does
// not import its backends, which import it.
//
// The setting is one of:
//
//	/var/lib/sluice/ckpt      a directory (relative paths are made absolute)
//	file:///mnt/share/ckpt    the same, as a URL
//	s3://bucket/prefix        S3: the bucket and an optional key prefix
//
// For S3 the endpoint and credentials come from the variables the AWS
// tools use: AWS_ENDPOINT_URL_S3, else AWS_ENDPOINT_URL (absent: AWS S3;
// "http://..." means no TLS), AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
// AWS_SESSION_TOKEN, and AWS_REGION, else AWS_DEFAULT_REGION.
package storeurl

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/sluicehq/sluice/objstore"
	"github.com/sluicehq/sluice/objstore/fsstore"
	"github.com/sluicehq/sluice/objstore/s3store"
)

// Location is a parsed setting: exactly one of Dir and S3 is set.
type Location struct {
	Dir string          // directory store: absolute, cleaned path
	S3  *s3store.Config // S3 store: bucket, prefix, endpoint and credentials
}

const want = "want a directory path, file:///path or s3://bucket/prefix"

// scheme matches a URL scheme and its colon; a directory path that starts
// like one ("data:x") must be written "./data:x".
var scheme = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)

// Open parses setting with the process environment and opens the store:
// a directory store creates the directory if missing, an S3 store checks
// that the bucket exists and the credentials reach it.
func Open(ctx context.Context, setting string) (objstore.Store, error) {
	loc, err := Parse(setting, os.Getenv)
	if err != nil {
		return nil, err
	}
	if loc.S3 != nil {
		return s3store.Open(ctx, *loc.S3)
	}
	return fsstore.Open(loc.Dir)
}

// Parse parses setting, reading the S3 variables with getenv. Its errors
// name the part of the setting (or the variable) that is wrong; they
// never contain a secret.
func Parse(setting string, getenv func(string) string) (Location, error) {
	if setting == "" {
		return Location{}, fmt.Errorf("storeurl: empty setting: %s", want)
	}
	if !scheme.MatchString(setting) {
		dir, err := filepath.Abs(setting)
		if err != nil {
			return Location{}, fmt.Errorf("storeurl: directory %q: %w", setting, err)
		}
		return Location{Dir: dir}, nil
	}
	u, err := url.Parse(setting)
	if err != nil {
		// Not the url.Error itself: it quotes the whole setting, which may
		// hold a password.
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		return Location{}, fmt.Errorf("storeurl: not a valid URL: %w; %s", err, want)
	}
	switch u.Scheme {
	case "file":
		return parseFile(setting, u)
	case "s3":
		return parseS3(setting, u, getenv)
	}
	return Location{}, fmt.Errorf("storeurl: %q: unsupported scheme %q (write ./%s for a directory); %s", setting, u.Scheme, setting, want)
}

func parseFile(setting string, u *url.URL) (Location, error) {
	switch {
	case u.Opaque != "":
		return Location{}, fmt.Errorf("storeurl: %q: a file URL needs an absolute path, file:///path (or give the path without file:)", setting)
	case u.Host != "" && u.Host != "localhost":
		return Location{}, fmt.Errorf("storeurl: %q: host %q: only local paths are supported, file:///path (mount a share and give its path)", setting, u.Host)
	case u.User != nil:
		return Location{}, fmt.Errorf("storeurl: %q: a file URL takes no user", setting)
	case u.RawQuery != "" || u.ForceQuery:
		return Location{}, fmt.Errorf("storeurl: %q: query %q not supported", setting, u.RawQuery)
	case u.Fragment != "":
		return Location{}, fmt.Errorf("storeurl: %q: fragment %q not supported", setting, u.Fragment)
	case u.Path == "" || !strings.HasPrefix(u.Path, "/"):
		return Location{}, fmt.Errorf("storeurl: %q: no path, want file:///path", setting)
	}
	return Location{Dir: filepath.Clean(u.Path)}, nil
}

func parseS3(setting string, u *url.URL, getenv func(string) string) (Location, error) {
	switch {
	case u.Opaque != "":
		return Location{}, fmt.Errorf("storeurl: %q: want s3://bucket/prefix", setting)
	case u.User != nil:
		return Location{}, fmt.Errorf("storeurl: %q: credentials do not go in the URL; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY", u.Redacted())
	case u.Host == "":
		return Location{}, fmt.Errorf("storeurl: %q: no bucket, want s3://bucket/prefix", setting)
	case u.Port() != "" || strings.HasSuffix(u.Host, ":"):
		return Location{}, fmt.Errorf("storeurl: %q: bucket %q has a port; the endpoint goes in AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL", setting, u.Host)
	case u.RawQuery != "" || u.ForceQuery:
		return Location{}, fmt.Errorf("storeurl: %q: query %q not supported", setting, u.RawQuery)
	case u.Fragment != "":
		return Location{}, fmt.Errorf("storeurl: %q: fragment %q not supported", setting, u.Fragment)
	}
	cfg := s3store.Config{Bucket: u.Host, Prefix: strings.TrimPrefix(u.Path, "/")}
	if cfg.Prefix != "" && !strings.HasSuffix(cfg.Prefix, "/") {
		cfg.Prefix += "/"
	}
	if err := objstore.ValidatePrefix(cfg.Prefix); err != nil {
		return Location{}, fmt.Errorf("storeurl: %q: prefix %q: %w", setting, cfg.Prefix, err)
	}
	endpointVar := "AWS_ENDPOINT_URL_S3"
	if cfg.Endpoint = getenv(endpointVar); cfg.Endpoint == "" {
		endpointVar = "AWS_ENDPOINT_URL"
		cfg.Endpoint = getenv(endpointVar)
	}
	if cfg.Region = getenv("AWS_REGION"); cfg.Region == "" {
		cfg.Region = getenv("AWS_DEFAULT_REGION")
	}
	cfg.AccessKeyID = getenv("AWS_ACCESS_KEY_ID")
	cfg.SecretAccessKey = getenv("AWS_SECRET_ACCESS_KEY")
	cfg.SessionToken = getenv("AWS_SESSION_TOKEN")
	var missing []string
	if cfg.AccessKeyID == "" {
		missing = append(missing, "AWS_ACCESS_KEY_ID")
	}
	if cfg.SecretAccessKey == "" {
		missing = append(missing, "AWS_SECRET_ACCESS_KEY")
	}
	if len(missing) > 0 {
		return Location{}, fmt.Errorf("storeurl: %q: no S3 credentials: set %s", setting, strings.Join(missing, " and "))
	}
	if err := cfg.Validate(); err != nil {
		if cfg.Endpoint != "" {
			return Location{}, fmt.Errorf("storeurl: %q (endpoint from %s): %w", setting, endpointVar, err)
		}
		return Location{}, fmt.Errorf("storeurl: %q: %w", setting, err)
	}
	return Location{S3: &cfg}, nil
}
