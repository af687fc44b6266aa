// Package guest is the guest side of Sluice's WebAssembly operators: an
// operator written in Go, compiled with
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o op.wasm ./myop
//
// and run by a node's wasmop.Host like any operator. The program
// registers its operator in an init function (a reactor module's main is
// never run):
//
//	type counter struct{}
//
//	func (counter) ProcessRecord(ctx *guest.Context, rec guest.Record) error {
//		n := guest.GetInt64(ctx, rec.Key) + 1
//		guest.PutInt64(ctx, rec.Key, n)
//		ctx.Produce("counts", rec.Key, strconv.AppendInt(nil, n, 10))
//		return nil
//	}
//
//	func init() { guest.Register(counter{}) }
//	func main() {}
//
// A record's Key, Value and Stream are valid only during the call (they
// live in the input buffer the host writes each record into); copy what
// is kept. Produced records are buffered and handed to the host in one
// batch when the call returns. An error wrapping ErrBadRecord sends the
// record to the dead-letter stream at once; another error is retried
// under the operator's restart policy; a panic kills the guest instance
// (its record is dead-lettered and the host starts a fresh instance).
// Anything that must outlive a call belongs in state, as in the Go SDK.
//
// The ABI the package speaks is documented in docs/operator-protocol.md.
// The package builds only for GOOS=wasip1 GOARCH=wasm.
package guest
