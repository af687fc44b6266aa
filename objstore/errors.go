package objstore

import "errors"

// Errors returned (wrapped) by every Store.
var (
	// ErrNotFound: there is no object under the key.
	ErrNotFound = errors.New("objstore: object not found")
	// ErrInvalidKey: the key breaks the rules of ValidateKey.
	ErrInvalidKey = errors.New("objstore: invalid key")
	// ErrSizeMismatch: Put's reader yielded fewer or more bytes than the
	// size it was given.
	ErrSizeMismatch = errors.New("objstore: reader length differs from size")
)
