package storeurl

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/s3test"
	"github.com/sluicehq/sluice/objstore/fsstore"
	"github.com/sluicehq/sluice/objstore/s3store"
)

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

var creds = map[string]string{"AWS_ACCESS_KEY_ID": "AKID", "AWS_SECRET_ACCESS_KEY": "s3cr3t"}

func with(extra map[string]string) map[string]string {
	m := map[string]string{}
	for k, v := range creds {
		m[k] = v
	}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

func TestParseDirectories(t *testing.T) {
	wd, _ := os.Getwd()
	for _, tc := range []struct{ setting, want string }{
		{"/var/lib/sluice/ckpt", "/var/lib/sluice/ckpt"},
		{"/var/lib/../lib/x/", "/var/lib/x"},
		{"rel/dir", filepath.Join(wd, "rel/dir")},
		{"./data:x", filepath.Join(wd, "data:x")},
		{"file:///mnt/share/ckpt", "/mnt/share/ckpt"},
		{"file://localhost/mnt/x", "/mnt/x"},
		{"file:///mnt/with%20space", "/mnt/with space"},
	} {
		loc, err := Parse(tc.setting, envOf(nil))
		if err != nil || loc.Dir != tc.want || loc.S3 != nil {
			t.Errorf("Parse(%q): got %+v, %v; want directory %s", tc.setting, loc, err, tc.want)
		}
	}
}

func TestParseS3(t *testing.T) {
	for _, tc := range []struct {
		name    string
		setting string
		env     map[string]string
		bucket  string
		prefix  string
		check   func(t *testing.T, loc Location)
	}{
		{"bucket only", "s3://ckpt-bucket", creds, "ckpt-bucket", "", nil},
		{"bucket slash", "s3://ckpt-bucket/", creds, "ckpt-bucket", "", nil},
		{"prefix", "s3://ckpt-bucket/jobs/7", creds, "ckpt-bucket", "jobs/7/", nil},
		{"prefix slash", "s3://ckpt-bucket/jobs/7/", creds, "ckpt-bucket", "jobs/7/", nil},
		{"AWS by default", "s3://b-1/p", creds, "b-1", "p/", func(t *testing.T, loc Location) {
			if loc.S3.Endpoint != "" {
				t.Errorf("Endpoint: got %q, want empty (AWS S3)", loc.S3.Endpoint)
			}
		}},
		{"endpoint for S3 wins", "s3://b-1/p", with(map[string]string{
			"AWS_ENDPOINT_URL_S3": "http://127.0.0.1:8333", "AWS_ENDPOINT_URL": "https://other",
		}), "b-1", "p/", func(t *testing.T, loc Location) {
			if loc.S3.Endpoint != "http://127.0.0.1:8333" {
				t.Errorf("Endpoint: got %q, want AWS_ENDPOINT_URL_S3", loc.S3.Endpoint)
			}
		}},
		{"generic endpoint", "s3://b-1", with(map[string]string{"AWS_ENDPOINT_URL": "https://minio.example:9000"}), "b-1", "", func(t *testing.T, loc Location) {
			if loc.S3.Endpoint != "https://minio.example:9000" {
				t.Errorf("Endpoint: got %q", loc.S3.Endpoint)
			}
		}},
		{"credentials and region", "s3://b-1", with(map[string]string{
			"AWS_SESSION_TOKEN": "tok", "AWS_REGION": "eu-west-1", "AWS_DEFAULT_REGION": "us-east-2",
		}), "b-1", "", func(t *testing.T, loc Location) {
			c := loc.S3
			if c.AccessKeyID != "AKID" || c.SecretAccessKey != "s3cr3t" || c.SessionToken != "tok" || c.Region != "eu-west-1" {
				t.Errorf("got %+v, want the credentials and AWS_REGION", c)
			}
		}},
		{"default region", "s3://b-1", with(map[string]string{"AWS_DEFAULT_REGION": "us-east-2"}), "b-1", "", func(t *testing.T, loc Location) {
			if loc.S3.Region != "us-east-2" {
				t.Errorf("Region: got %q, want AWS_DEFAULT_REGION", loc.S3.Region)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			loc, err := Parse(tc.setting, envOf(tc.env))
			if err != nil {
				t.Fatalf("Parse(%q): %v", tc.setting, err)
			}
			if loc.S3 == nil || loc.Dir != "" {
				t.Fatalf("Parse(%q): got %+v, want an S3 location", tc.setting, loc)
			}
			if loc.S3.Bucket != tc.bucket || loc.S3.Prefix != tc.prefix {
				t.Errorf("Parse(%q): got bucket %q prefix %q, want %q %q", tc.setting, loc.S3.Bucket, loc.S3.Prefix, tc.bucket, tc.prefix)
			}
			if tc.check != nil {
				tc.check(t, loc)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		setting string
		env     map[string]string
		want    []string // parts of the message
	}{
		{"", nil, []string{"empty setting", "s3://bucket/prefix"}},
		{"gs://bucket/x", nil, []string{`unsupported scheme "gs"`}},
		{"data:x", nil, []string{`unsupported scheme "data"`, "./data:x"}},
		{"file:relative", nil, []string{"file:///path"}},
		{"file://server/share", nil, []string{`host "server"`}},
		{"file:///x?y=1", nil, []string{`query "y=1"`}},
		{"file:///x#frag", nil, []string{`fragment "frag"`}},
		{"s3://", creds, []string{"no bucket"}},
		{"s3:bucket", creds, []string{"s3://bucket/prefix"}},
		{"s3://Bad_Bucket/x", creds, []string{`Bucket "Bad_Bucket"`}},
		{"s3://bucket:9000/x", creds, []string{"has a port", "AWS_ENDPOINT_URL"}},
		{"s3://AKID:s3cr3t@bucket/x", creds, []string{"credentials do not go in the URL"}},
		{"s3://bucket/a//b", creds, []string{`prefix "a//b/"`, "empty segment"}},
		{"s3://bucket/../x", creds, []string{`".." segment`}},
		{"s3://bucket/x?versionId=1", creds, []string{`query "versionId=1"`}},
		{"s3://bucket/x", nil, []string{"no S3 credentials", "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"}},
		{"s3://bucket/x", map[string]string{"AWS_ACCESS_KEY_ID": "AKID"}, []string{"set AWS_SECRET_ACCESS_KEY"}},
		{"s3://bucket/x", with(map[string]string{"AWS_ENDPOINT_URL": "127.0.0.1:8333"}), []string{"endpoint from AWS_ENDPOINT_URL", "scheme must be http or https"}},
		{"s3://bucket/x", with(map[string]string{"AWS_ENDPOINT_URL_S3": "http://h/path"}), []string{"endpoint from AWS_ENDPOINT_URL_S3", "no path"}},
		{"s3://bucket/x%zz", creds, []string{"not a valid URL"}},
	} {
		_, err := Parse(tc.setting, envOf(tc.env))
		if err == nil {
			t.Errorf("Parse(%q): got no error, want one saying %q", tc.setting, tc.want)
			continue
		}
		msg := err.Error()
		if !strings.HasPrefix(msg, "storeurl: ") {
			t.Errorf("Parse(%q): %q does not start with the package", tc.setting, msg)
		}
		for _, w := range tc.want {
			if !strings.Contains(msg, w) {
				t.Errorf("Parse(%q): got %q, want it to say %q", tc.setting, msg, w)
			}
		}
		if strings.Contains(msg, "s3cr3t") {
			t.Errorf("Parse(%q): the message %q contains the secret", tc.setting, msg)
		}
	}
}

func TestOpenDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ckpt")
	st, err := Open(t.Context(), "file://"+dir)
	if err != nil {
		t.Fatal(err)
	}
	if fs, ok := st.(*fsstore.Store); !ok || fs.Dir() != dir {
		t.Fatalf("Open(file://%s): got %T %+v, want an fsstore on it", dir, st, st)
	}
	if err := st.Put(t.Context(), "k", strings.NewReader("v"), 1); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "k")); err != nil || string(b) != "v" {
		t.Errorf("file k: got %q, %v", b, err)
	}
}

func TestOpenS3(t *testing.T) {
	srv := s3test.Start(t)
	for k, v := range map[string]string{
		"AWS_ENDPOINT_URL_S3": srv.Endpoint(), "AWS_ENDPOINT_URL": "", "AWS_ACCESS_KEY_ID": srv.AccessKey(),
		"AWS_SECRET_ACCESS_KEY": srv.SecretKey(), "AWS_SESSION_TOKEN": "", "AWS_REGION": "", "AWS_DEFAULT_REGION": "",
	} {
		t.Setenv(k, v)
	}
	ctx := t.Context()
	st, err := Open(ctx, "s3://"+srv.Bucket()+"/jobs/7")
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if _, ok := st.(*s3store.Store); !ok {
		t.Fatalf("Open: got %T, want an *s3store.Store", st)
	}
	if err := st.Put(ctx, "ckpt/1.meta", strings.NewReader("v"), 1); err != nil {
		t.Fatal(err)
	}
	root, err := Open(ctx, "s3://"+srv.Bucket())
	if err != nil {
		t.Fatal(err)
	}
	if info, err := root.Stat(ctx, "jobs/7/ckpt/1.meta"); err != nil || info.Size != 1 {
		t.Errorf("the object in the bucket: got %+v, %v; want it at jobs/7/ckpt/1.meta", info, err)
	}
	if _, err := Open(ctx, "s3://missing-bucket/x"); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("Open(missing bucket): got %v", err)
	}
}

// FuzzParse checks that Parse never panics, that a parsed location is
// usable (an absolute directory, or an S3 config that validates), and that
// no error repeats the secret.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"/a/b", "rel", "file:///x", "file://h/x", "s3://b/p", "s3://b:1/p", "s3://u:p@b/x", "gs://x", "data:x", "s3://b/a//b", "s3://b/%zz"} {
		f.Add(s, "")
		f.Add(s, "http://127.0.0.1:9000")
	}
	f.Fuzz(func(t *testing.T, setting, endpoint string) {
		env := with(map[string]string{"AWS_ENDPOINT_URL": endpoint})
		loc, err := Parse(setting, envOf(env))
		if err != nil {
			if strings.Contains(err.Error(), "s3cr3t") && !strings.Contains(setting, "s3cr3t") && !strings.Contains(endpoint, "s3cr3t") {
				t.Fatalf("error %q contains the secret", err)
			}
			return
		}
		switch {
		case (loc.S3 == nil) == (loc.Dir == ""):
			t.Fatalf("Parse(%q): got %+v, want exactly one of Dir and S3", setting, loc)
		case loc.S3 != nil:
			if err := loc.S3.Validate(); err != nil {
				t.Fatalf("Parse(%q): S3 config does not validate: %v", setting, err)
			}
		case !filepath.IsAbs(loc.Dir):
			t.Fatalf("Parse(%q): directory %q is not absolute", setting, loc.Dir)
		}
	})
}
