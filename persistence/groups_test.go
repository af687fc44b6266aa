package persistence

import (
	"fmt"
	"testing"
)

func TestExportImportGroups(t *testing.T) {
	src, dst := open(t, t.TempDir()), open(t, t.TempDir())
	s := src.NewStore("op")
	for kg := 0; kg < 8; kg++ {
		for i := 0; i < 50; i++ {
			s.Set(kg, []byte(fmt.Sprintf("k%03d", i)), []byte(fmt.Sprintf("v%d-%d", kg, i)))
		}
	}
	src.NewStore("other").Set(3, []byte("x"), []byte("not exported"))
	sOther := src.NewStore("other")
	sOther.Set(3, []byte("x"), []byte("y"))
	if err := sOther.Commit(true); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(true); err != nil {
		t.Fatal(err)
	}
	// Stale data at the destination, inside and outside the moved groups.
	d := dst.NewStore("op")
	d.Set(3, []byte("stale"), []byte("1"))
	d.Set(7, []byte("keep"), []byte("1"))
	if err := d.Commit(true); err != nil {
		t.Fatal(err)
	}
	chunks, n := 0, 0
	first := true
	err := src.ExportGroups("op", 2, 5, 500, func(kvs []KV) error {
		chunks++
		n += len(kvs)
		err := dst.ImportGroups("op", 2, 5, first, kvs)
		first = false
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if n != 150 || chunks < 3 {
		t.Fatalf("exported %d pairs in %d chunks, want 150 in several", n, chunks)
	}
	d.DropCache()
	if v, ok := mustGet(t, d, 4, "k049"); !ok || v != "v4-49" {
		t.Fatalf("imported k049 in group 4 = %q,%v", v, ok)
	}
	if _, ok := mustGet(t, d, 3, "stale"); ok {
		t.Fatal("stale key in an imported group survived")
	}
	if _, ok := mustGet(t, d, 7, "keep"); !ok {
		t.Fatal("key outside the imported groups was removed")
	}
	if _, ok := mustGet(t, d, 5, "k000"); ok {
		t.Fatal("group 5 was imported though the range ends before it")
	}
	if err := src.DeleteGroups("op", 2, 5); err != nil {
		t.Fatal(err)
	}
	s.DropCache()
	if _, ok := mustGet(t, s, 3, "k000"); ok {
		t.Fatal("deleted group still has data")
	}
	if _, ok := mustGet(t, s, 5, "k000"); !ok {
		t.Fatal("group outside the deleted range lost data")
	}
	if err := dst.ImportGroups("op", 0, 1, false, []KV{{Key: []byte("bogus"), Value: nil}}); err == nil {
		t.Fatal("import of a key outside the groups succeeded")
	}
}
