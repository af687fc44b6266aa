package wire

import (
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/runtime/protoiface"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/sluicehq/sluice/internal/core"
)

// BatchFrame is how a RecordBatch travels between nodes. Its bytes on the
// wire are exactly a RecordBatch's; what differs is who copies them.
//
// protoactor remote marshals every message with proto.Marshal and hands
// the receiver's copy of the bytes to proto.Unmarshal. For a generated
// RecordBatch that copies the packed records twice more: once into the
// marshalled buffer on the sending node, once out of the received buffer on
// the receiving one, and each copy is a large allocation the collector
// must then reclaim. A BatchFrame is encoded once, records and all, when it
// is made (EncodeFrame), and marshalling hands that buffer over as it is;
// unmarshalling decodes the small fields and leaves the batch's Records aliasing
// the received buffer.
//
// The aliasing is safe because of where the buffer comes from: protoactor's
// endpoint reader passes each envelope's own bytes, which nothing else reads
// or reuses. Code that unmarshals a BatchFrame from a buffer it reuses must
// copy the batch's Records first.
//
// A BatchFrame has no fields of its own as far as protobuf reflection is
// concerned (its descriptor, sluice.wire.BatchFrame, is empty): its
// contents are reached only through its Batch method.
type BatchFrame struct {
	// enc is the whole encoded RecordBatch, records included: set by
	// EncodeFrame, on the sending side.
	enc []byte
	// batch is the decoded batch, set by unmarshalling, on the receiving
	// side.
	batch *RecordBatch
}

// Batch returns the frame's batch; its Records alias the frame's bytes. A
// frame that was never marshalled (sent to an actor in the same process)
// is decoded here.
func (f *BatchFrame) Batch() (*RecordBatch, error) {
	if f.batch == nil && f.enc != nil {
		return decodeFrame(f.enc)
	}
	if f.batch == nil {
		return nil, fmt.Errorf("wire: an empty record batch frame")
	}
	return f.batch, nil
}

// EncodeFrame encodes rb with recs packed as its records (AppendRecords's
// format), in one buffer of exactly the encoded size. rb.Records must be
// empty: the records are recs. Nothing of recs is referenced afterwards.
func EncodeFrame(rb *RecordBatch, recs []core.Record) *BatchFrame {
	if len(rb.Records) != 0 {
		panic("wire: EncodeFrame of a RecordBatch that holds packed records")
	}
	n := RecordsSize(recs)
	opts := proto.MarshalOptions{}
	buf := make([]byte, 0, opts.Size(rb)+protowire.SizeTag(recordsField)+protowire.SizeBytes(n))
	buf, err := opts.MarshalAppend(buf, rb)
	if err != nil {
		// A RecordBatch holds no field that fails to marshal: proto3, no
		// required fields, and its strings are names core.ValidName
		// admitted and actor ids, all valid UTF-8. Failing here is a bug.
		panic(fmt.Sprintf("wire: encoding a record batch: %v", err))
	}
	buf = protowire.AppendTag(buf, recordsField, protowire.BytesType)
	buf = protowire.AppendVarint(buf, uint64(n))
	buf = AppendRecords(buf, recs)
	return &BatchFrame{enc: buf}
}

// recordsField is RecordBatch.records' field number.
const recordsField protowire.Number = 5

// RecordsSize is the length of AppendRecords(nil, recs).
func RecordsSize(recs []core.Record) int {
	n := 0
	for _, r := range recs {
		n += protowire.SizeBytes(len(r.Key)) + protowire.SizeBytes(len(r.Value))
		n += protowire.SizeVarint(protowire.EncodeZigZag(eventNanos(r)))
		n += protowire.SizeVarint(uint64(len(r.Headers)))
		for _, h := range r.Headers {
			n += protowire.SizeBytes(len(h.Key)) + protowire.SizeBytes(len(h.Value))
		}
	}
	return n
}

// decodeFrame parses an encoded RecordBatch into a new RecordBatch whose
// Records alias b.
func decodeFrame(b []byte) (*RecordBatch, error) {
	var (
		recs     []byte
		recsAt   = -1 // where the records field starts in b
		recsEnd  int
		repeated bool
	)
	for off := 0; off < len(b); {
		num, typ, n := protowire.ConsumeTag(b[off:])
		if n < 0 {
			return nil, fmt.Errorf("wire: record batch frame: %w", protowire.ParseError(n))
		}
		m := protowire.ConsumeFieldValue(num, typ, b[off+n:])
		if m < 0 {
			return nil, fmt.Errorf("wire: record batch frame: field %d: %w", num, protowire.ParseError(m))
		}
		if num == recordsField && typ == protowire.BytesType {
			v, _ := protowire.ConsumeBytes(b[off+n:])
			if recsAt >= 0 {
				// Protobuf keeps the last of a repeated scalar field;
				// EncodeFrame writes it once.
				repeated = true
			}
			recs, recsAt, recsEnd = v, off, off+n+m
		}
		off += n + m
	}
	rest := b
	switch {
	case recsAt < 0:
	case recsEnd == len(b) && !repeated:
		rest = b[:recsAt] // the records come last, as EncodeFrame writes them
	default:
		rest = withoutField(b, recordsField)
	}
	rb := new(RecordBatch)
	if err := proto.Unmarshal(rest, rb); err != nil {
		return nil, fmt.Errorf("wire: record batch frame: %w", err)
	}
	rb.Records = recs
	return rb, nil
}

// withoutField returns a copy of the encoded message b without field num
// (b is known to parse).
func withoutField(b []byte, num protowire.Number) []byte {
	out := make([]byte, 0, len(b))
	for off := 0; off < len(b); {
		n2, typ, n := protowire.ConsumeTag(b[off:])
		m := protowire.ConsumeFieldValue(n2, typ, b[off+n:])
		if n2 != num {
			out = append(out, b[off:off+n+m]...)
		}
		off += n + m
	}
	return out
}

// The protobuf machinery: BatchFrame is a message of its own type,
// registered under sluice.wire.BatchFrame so that protoactor's receiver
// finds it by the name the sender put in the envelope, with marshal and
// unmarshal functions of its own (protoiface.Methods, the fast path that
// generated code also provides).

var (
	frameDesc protoreflect.MessageDescriptor
	frameType = frameMessageType{}
)

func init() {
	fd, err := protodesc.NewFile(&descriptorpb.FileDescriptorProto{
		Name:        proto.String("sluice/wire/frame.proto"),
		Package:     proto.String("sluice.wire"),
		Syntax:      proto.String("proto3"),
		MessageType: []*descriptorpb.DescriptorProto{{Name: proto.String("BatchFrame")}},
	}, nil)
	if err != nil {
		panic(fmt.Sprintf("wire: BatchFrame descriptor: %v", err))
	}
	frameDesc = fd.Messages().Get(0)
	if err := protoregistry.GlobalTypes.RegisterMessage(frameType); err != nil {
		panic(fmt.Sprintf("wire: registering BatchFrame: %v", err))
	}
}

var frameMethods = &protoiface.Methods{
	Flags: protoiface.SupportMarshalDeterministic | protoiface.SupportUnmarshalDiscardUnknown,
	Marshal: func(in protoiface.MarshalInput) (protoiface.MarshalOutput, error) {
		f := in.Message.(*frameMessage).f
		if f.enc == nil {
			return protoiface.MarshalOutput{}, fmt.Errorf("wire: marshalling a BatchFrame not made by EncodeFrame")
		}
		if len(in.Buf) == 0 {
			// proto.Marshal: the encoded buffer is the result, uncopied.
			return protoiface.MarshalOutput{Buf: f.enc}, nil
		}
		return protoiface.MarshalOutput{Buf: append(in.Buf, f.enc...)}, nil
	},
	Unmarshal: func(in protoiface.UnmarshalInput) (protoiface.UnmarshalOutput, error) {
		rb, err := decodeFrame(in.Buf)
		if err != nil {
			return protoiface.UnmarshalOutput{}, err
		}
		in.Message.(*frameMessage).f.batch = rb
		return protoiface.UnmarshalOutput{Flags: protoiface.UnmarshalInitialized}, nil
	},
	// Merge (proto.Merge, proto.Clone) copies the frame: its contents are
	// never modified once made, so sharing them is a copy.
	Merge: func(in protoiface.MergeInput) protoiface.MergeOutput {
		src, ok1 := in.Source.(*frameMessage)
		dst, ok2 := in.Destination.(*frameMessage)
		if !ok1 || !ok2 {
			return protoiface.MergeOutput{}
		}
		*dst.f = *src.f
		return protoiface.MergeOutput{Flags: protoiface.MergeComplete}
	},
	CheckInitialized: func(protoiface.CheckInitializedInput) (protoiface.CheckInitializedOutput, error) {
		return protoiface.CheckInitializedOutput{}, nil
	},
}

// ProtoReflect makes BatchFrame a proto.Message.
func (f *BatchFrame) ProtoReflect() protoreflect.Message { return &frameMessage{f: f} }

// Reset empties the frame (proto.Unmarshal resets before it decodes).
func (f *BatchFrame) Reset() { *f = BatchFrame{} }

type frameMessageType struct{}

func (frameMessageType) New() protoreflect.Message                  { return &frameMessage{f: new(BatchFrame)} }
func (frameMessageType) Zero() protoreflect.Message                 { return &frameMessage{f: (*BatchFrame)(nil)} }
func (frameMessageType) Descriptor() protoreflect.MessageDescriptor { return frameDesc }

// frameMessage is BatchFrame's protoreflect.Message: a message with no
// fields, whose contents travel through frameMethods.
type frameMessage struct{ f *BatchFrame }

func (m *frameMessage) Descriptor() protoreflect.MessageDescriptor { return frameDesc }
func (m *frameMessage) Type() protoreflect.MessageType             { return frameType }
func (m *frameMessage) New() protoreflect.Message                  { return frameType.New() }
func (m *frameMessage) Interface() protoreflect.ProtoMessage       { return m.f }
func (m *frameMessage) Range(func(protoreflect.FieldDescriptor, protoreflect.Value) bool) {
}
func (m *frameMessage) Has(fd protoreflect.FieldDescriptor) bool { panic(noField(fd)) }
func (m *frameMessage) Clear(fd protoreflect.FieldDescriptor)    { panic(noField(fd)) }
func (m *frameMessage) Get(fd protoreflect.FieldDescriptor) protoreflect.Value {
	panic(noField(fd))
}
func (m *frameMessage) Set(fd protoreflect.FieldDescriptor, _ protoreflect.Value) {
	panic(noField(fd))
}
func (m *frameMessage) Mutable(fd protoreflect.FieldDescriptor) protoreflect.Value {
	panic(noField(fd))
}
func (m *frameMessage) NewField(fd protoreflect.FieldDescriptor) protoreflect.Value {
	panic(noField(fd))
}
func (m *frameMessage) WhichOneof(od protoreflect.OneofDescriptor) protoreflect.FieldDescriptor {
	panic(fmt.Sprintf("wire: BatchFrame has no oneof %s", od.FullName()))
}
func (m *frameMessage) GetUnknown() protoreflect.RawFields { return nil }
func (m *frameMessage) SetUnknown(raw protoreflect.RawFields) {
	if len(raw) > 0 {
		panic("wire: BatchFrame keeps no unknown fields")
	}
}
func (m *frameMessage) IsValid() bool                     { return m.f != nil }
func (m *frameMessage) ProtoMethods() *protoiface.Methods { return frameMethods }
func noField(fd protoreflect.FieldDescriptor) string {
	return fmt.Sprintf("wire: BatchFrame has no field %s", fd.FullName())
}
