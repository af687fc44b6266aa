package fsstore_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/sluicehq/sluice/objstore"
	"github.com/sluicehq/sluice/objstore/fsstore"
)

func Example() {
	dir, _ := os.MkdirTemp("", "ckpt")
	defer os.RemoveAll(dir)
	ctx := context.Background()

	st, err := fsstore.Open(dir)
	if err != nil {
		panic(err)
	}
	for _, key := range []string{"ckpt/000002/000007.sst", "ckpt/000002/MANIFEST", "ckpt/000001/MANIFEST"} {
		if err := st.Put(ctx, key, strings.NewReader(key), int64(len(key))); err != nil {
			panic(err)
		}
	}
	infos, _ := st.List(ctx, "ckpt/000002/")
	for _, in := range infos {
		fmt.Println(in.Key, in.Size)
	}
	_, err = st.Get(ctx, "ckpt/000003/MANIFEST")
	fmt.Println(errors.Is(err, objstore.ErrNotFound))
	// Output:
	// ckpt/000002/000007.sst 22
	// ckpt/000002/MANIFEST 20
	// true
}
