// Package wire holds the protobuf messages that cross nodes over protoactor
// remote: record batches, acks, bounces and state-handoff chunks.
//
// wire.pb.go is generated and committed, so building never needs protoc.
// To regenerate after editing wire.proto (needs Debian's protobuf-compiler):
//
//	go generate ./actors/wire
package wire

//go:generate sh -c "go build -o $(go env GOPATH)/bin/protoc-gen-go google.golang.org/protobuf/cmd/protoc-gen-go && PATH=$(go env GOPATH)/bin:$PATH protoc -I . -I $(go list -m -f '{{.Dir}}' github.com/asynkron/protoactor-go)/actor --go_out=. --go_opt=paths=source_relative --go_opt=Mactor.proto=github.com/asynkron/protoactor-go/actor wire.proto"
