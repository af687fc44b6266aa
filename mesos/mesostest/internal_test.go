package mesostest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"testing"
	"testing/iotest"
	"time"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
	"github.com/mesos/mesos-go/api/v1/lib/recordio"
)

func TestRecordWriterFormat(t *testing.T) {
	var buf bytes.Buffer
	w := newRecordWriter(&buf)
	for _, rec := range []string{"a", "hello\n", "0123456789"} {
		if err := w.WriteRecord([]byte(rec)); err != nil {
			t.Fatalf("WriteRecord(%q): %v", rec, err)
		}
	}
	const want = "1\na6\nhello\n10\n0123456789"
	if got := buf.String(); got != want {
		t.Fatalf("stream = %q, want %q", got, want)
	}
	if err := w.WriteRecord(nil); !errors.Is(err, errEmptyRecord) {
		t.Fatalf("WriteRecord(nil) = %v, want errEmptyRecord", err)
	}
}

type shortWriter struct{}

func (shortWriter) Write(p []byte) (int, error) { return len(p) - 1, nil }

func TestRecordWriterShortWrite(t *testing.T) {
	err := newRecordWriter(shortWriter{}).WriteRecord([]byte("abc"))
	if !errors.Is(err, io.ErrShortWrite) {
		t.Fatalf("WriteRecord on a short writer = %v, want io.ErrShortWrite", err)
	}
}

// splitRecords cuts data into records whose lengths are taken, cyclically,
// from sizes (each size byte + 1, so records are never empty).
func splitRecords(data, sizes []byte) [][]byte {
	var recs [][]byte
	for i := 0; len(data) > 0; i++ {
		n := 1
		if len(sizes) > 0 {
			n = int(sizes[i%len(sizes)]) + 1
		}
		n = min(n, len(data))
		recs = append(recs, data[:n])
		data = data[n:]
	}
	return recs
}

// FuzzRecordIORoundTrip checks that what the test master writes is read
// back unchanged, record by record, by mesos-go's own RecordIO reader (the
// one httpcli uses for the subscription stream), whatever the read sizes.
func FuzzRecordIORoundTrip(f *testing.F) {
	f.Add([]byte("hello world"), []byte{4})
	f.Add([]byte("\n\n\n0\n12\n"), []byte{0, 1, 2})
	f.Add(bytes.Repeat([]byte{0xff, '\n', '9'}, 400), []byte{200, 3, 255, 0})
	f.Add([]byte{}, []byte{})
	f.Add([]byte("x"), []byte{})
	f.Fuzz(func(t *testing.T, data, sizes []byte) {
		recs := splitRecords(data, sizes)
		var buf bytes.Buffer
		w := newRecordWriter(&buf)
		for _, r := range recs {
			if err := w.WriteRecord(r); err != nil {
				t.Fatalf("WriteRecord: %v", err)
			}
		}
		encoded := buf.Bytes()
		readers := map[string]func(io.Reader) io.Reader{
			"whole":    func(r io.Reader) io.Reader { return r },
			"one-byte": iotest.OneByteReader,
			"half":     iotest.HalfReader,
		}
		for name, wrap := range readers {
			r := recordio.NewReader(wrap(bytes.NewReader(encoded)))
			for i, want := range recs {
				got, err := r.ReadFrame()
				if err != nil {
					t.Fatalf("%s: record %d of %d: ReadFrame: %v", name, i, len(recs), err)
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("%s: record %d = %q, want %q", name, i, got, want)
				}
			}
			if got, err := r.ReadFrame(); err != io.EOF {
				t.Fatalf("%s: after %d records: ReadFrame = %q, %v; want io.EOF", name, len(recs), got, err)
			}
		}
	})
}

func TestAcceptsMediaType(t *testing.T) {
	cases := []struct {
		accept []string
		json   bool
		pb     bool
	}{
		{nil, true, true},
		{[]string{""}, true, true},
		{[]string{"*/*"}, true, true},
		{[]string{"application/*"}, true, true},
		{[]string{MediaTypeProtobuf}, false, true},
		{[]string{MediaTypeProtobuf, MediaTypeProtobuf}, false, true}, // mesos-go sends it twice
		{[]string{"application/json;q=0, */*"}, false, true},
		{[]string{"text/html"}, false, false},
		{[]string{"application/recordio"}, false, false},
		{[]string{"text/html, application/json;q=0.5"}, true, false},
	}
	for _, c := range cases {
		if got := acceptsMediaType(c.accept, MediaTypeJSON); got != c.json {
			t.Errorf("acceptsMediaType(%q, json) = %v, want %v", c.accept, got, c.json)
		}
		if got := acceptsMediaType(c.accept, MediaTypeProtobuf); got != c.pb {
			t.Errorf("acceptsMediaType(%q, protobuf) = %v, want %v", c.accept, got, c.pb)
		}
	}
}

func TestResources(t *testing.T) {
	offer := newResources(1, 128, 0, nil)
	var task resources
	task.addScalar(kind{name: "cpus"}, toFixed(0.1))
	task.addScalar(kind{name: "mem"}, toFixed(64))
	var tenth resources
	tenth.addScalar(kind{name: "cpus"}, toFixed(0.1))
	for i := 0; i < 10; i++ {
		if !offer.contains(task) {
			t.Fatalf("after %d tasks offer %s should contain %s", i, offer, task)
		}
		offer.sub(tenth)
	}
	if offer.contains(task) {
		t.Fatalf("offer %s should not contain %s", offer, task)
	}
	if got := newResources(1.5, 64, 0, []PortRange{{31000, 31002}, {31003, 31005}}).String(); got != "cpus:1.5;mem:64;ports:[31000-31005]" {
		t.Fatalf("String() = %q", got)
	}
	var disk resources
	disk.addScalar(kind{name: "disk"}, 5000)
	if disk.allocatable() {
		t.Fatal("disk-only resources must not be allocatable")
	}
	// Reserved resources are a different kind: unreserved ones do not
	// satisfy them, and they are offered only to their role.
	var reserved resources
	reserved.addScalar(kind{name: "cpus", role: "r", principal: "p"}, toFixed(1))
	if newResources(4, 0, 0, nil).contains(reserved) {
		t.Fatal("unreserved cpus satisfied reserved ones")
	}
	both := newResources(1, 0, 0, nil)
	both.add(reserved)
	if got := both.forRole("other").total("cpus"); got != toFixed(1) {
		t.Errorf("offered to another role: %d thousandths of cpus, want only the unreserved 1000", got)
	}
	if got := both.forRole("r").total("cpus"); got != toFixed(2) {
		t.Errorf("offered to the role: %d thousandths of cpus, want 2000", got)
	}
}

func TestRangeSet(t *testing.T) {
	s := rangeSet{{10, 20}, {30, 40}}.normalize()
	for _, tc := range []struct {
		name string
		got  rangeSet
		want rangeSet
	}{
		{"minus inside", s.minus(rangeSet{{12, 13}}), rangeSet{{10, 11}, {14, 20}, {30, 40}}},
		{"minus across", s.minus(rangeSet{{15, 35}}), rangeSet{{10, 14}, {36, 40}}},
		{"minus all", s.minus(rangeSet{{0, 100}}), nil},
		{"union adjacent", rangeSet{{1, 2}}.union(rangeSet{{3, 4}}), rangeSet{{1, 4}}},
		{"union overlapping, unsorted", rangeSet{{5, 9}, {1, 6}}.normalize(), rangeSet{{1, 9}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if fmt.Sprint(tc.got) != fmt.Sprint(tc.want) {
				t.Errorf("got %v, want %v", tc.got, tc.want)
			}
		})
	}
	if !s.contains(rangeSet{{10, 10}, {35, 40}}) || s.contains(rangeSet{{20, 21}}) {
		t.Error("contains")
	}
	if s.count() != 22 {
		t.Errorf("count = %d, want 22", s.count())
	}
}

func TestOfferFilterSemantics(t *testing.T) {
	now := time.Now()
	fw := &framework{filters: map[string][]offerFilter{}}
	fw.addFilter("a", newResources(1, 512, 0, nil), time.Minute, now)
	if !fw.filtered("a", newResources(1, 512, 0, nil), now) || !fw.filtered("a", newResources(0.5, 256, 0, nil), now) {
		t.Fatal("resources within the refused ones must be filtered")
	}
	if fw.filtered("a", newResources(2, 512, 0, nil), now) {
		t.Fatal("more resources than refused must not be filtered")
	}
	if fw.filtered("b", newResources(1, 512, 0, nil), now) {
		t.Fatal("filters are per agent")
	}
	if fw.filtered("a", newResources(1, 512, 0, nil), now.Add(time.Minute)) || len(fw.filters) != 0 {
		t.Fatal("expired filters must be dropped")
	}
	fw.addFilter("a", newResources(1, 512, 0, nil), 0, now)
	if len(fw.filters) != 0 {
		t.Fatal("refuse_seconds 0 must not install a filter")
	}
	five, neg, huge := 0.0, -1.0, 1e12
	for _, c := range []struct {
		f    *mesos.Filters
		want time.Duration
	}{{nil, 5 * time.Second}, {&mesos.Filters{}, 5 * time.Second}, {&mesos.Filters{RefuseSeconds: &five}, 0},
		{&mesos.Filters{RefuseSeconds: &neg}, 5 * time.Second}, {&mesos.Filters{RefuseSeconds: &huge}, maxRefuse}} {
		if got := refuseDuration(c.f); got != c.want {
			t.Errorf("refuseDuration(%v) = %v, want %v", c.f, got, c.want)
		}
	}
}
