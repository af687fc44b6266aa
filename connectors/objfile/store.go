package objfile

import (
	"bytes"
	"context"
	"errors"
	"time"

	"github.com/sluicehq/sluice/objstore"
)

// opTimeout bounds one store call; the store retries within it.
const opTimeout = 2 * time.Minute

func (f *files) putBytes(key string, data []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	return f.cfg.Stats.note(f.cfg.Store.Put(ctx, key, bytes.NewReader(data), int64(len(data))))
}

func (f *files) get(key string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	r, err := f.cfg.Store.Get(ctx, key)
	if errors.Is(err, objstore.ErrNotFound) {
		f.cfg.Stats.note(nil) // an answer: the store is up
		return nil, err
	}
	if err != nil {
		return nil, f.cfg.Stats.note(err)
	}
	defer r.Close()
	var b bytes.Buffer
	if _, err := b.ReadFrom(r); err != nil {
		return nil, f.cfg.Stats.note(err)
	}
	return b.Bytes(), f.cfg.Stats.note(nil)
}

func (f *files) stat(key string) (objstore.ObjectInfo, error) {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	info, err := f.cfg.Store.Stat(ctx, key)
	if errors.Is(err, objstore.ErrNotFound) {
		f.cfg.Stats.note(nil)
		return info, err
	}
	return info, f.cfg.Stats.note(err)
}

func (f *files) list(prefix string) ([]objstore.ObjectInfo, error) {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	objs, err := f.cfg.Store.List(ctx, prefix)
	return objs, f.cfg.Stats.note(err)
}

func (f *files) delete(key string) error {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	return f.cfg.Stats.note(f.cfg.Store.Delete(ctx, key))
}
