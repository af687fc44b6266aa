package mesostest

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/mesos/mesos-go/api/v1/lib/encoding"
)

// Media types accepted and produced by the scheduler endpoint.
const (
	// MediaTypeProtobuf is the binary protobuf encoding (the mesos-go default).
	MediaTypeProtobuf = "application/x-protobuf"
	// MediaTypeJSON is the JSON encoding.
	MediaTypeJSON = "application/json"
)

// codec encodes and decodes scheduler messages in one of the two media
// types. It is deliberately the same as mesos-go's encoding/codecs: the
// protobuf codec uses the gogo generated Marshal/Unmarshal methods and the
// JSON codec uses encoding/json, which dispatches to the ffjson generated
// MarshalJSON/UnmarshalJSON methods of the mesos-go types.
type codec struct {
	mediaType string
}

var (
	protobufCodec = &codec{mediaType: MediaTypeProtobuf}
	jsonCodec     = &codec{mediaType: MediaTypeJSON}
)

func (c *codec) encode(m encoding.Marshaler) ([]byte, error) {
	var (
		b   []byte
		err error
	)
	if c == jsonCodec {
		b, err = json.Marshal(m)
	} else {
		b, err = m.Marshal()
	}
	if err != nil {
		return nil, fmt.Errorf("encoding %T as %s: %w", m, c.mediaType, err)
	}
	return b, nil
}

func (c *codec) decode(b []byte, u encoding.Unmarshaler) error {
	var err error
	if c == jsonCodec {
		err = json.Unmarshal(b, u)
	} else {
		err = u.Unmarshal(b)
	}
	if err != nil {
		return fmt.Errorf("decoding %s into %T: %w", c.mediaType, u, err)
	}
	return nil
}

// codecForContentType maps a request Content-Type to a codec. Like the
// Mesos master (Master::Http::scheduler compares the header with
// APPLICATION_JSON / APPLICATION_PROTOBUF verbatim) the comparison is
// exact: parameters such as "; charset=utf-8" are rejected with 415.
func codecForContentType(ct string) (*codec, bool) {
	switch ct {
	case MediaTypeProtobuf:
		return protobufCodec, true
	case MediaTypeJSON:
		return jsonCodec, true
	}
	return nil, false
}

// negotiateAccept picks the response codec from the Accept header values,
// preferring JSON when both are acceptable, as the Mesos master does. No
// Accept header means anything is acceptable.
func negotiateAccept(values []string) (*codec, bool) {
	if acceptsMediaType(values, MediaTypeJSON) {
		return jsonCodec, true
	}
	if acceptsMediaType(values, MediaTypeProtobuf) {
		return protobufCodec, true
	}
	return nil, false
}

// acceptsMediaType implements the RFC 7231 Accept matching used by
// libprocess' Request::acceptsMediaType: the most specific matching media
// range decides, and it must have a non-zero q value.
func acceptsMediaType(values []string, mediaType string) bool {
	header := strings.TrimSpace(strings.Join(values, ","))
	if header == "" {
		return true
	}
	typ, _, _ := strings.Cut(mediaType, "/")
	best, bestQ := -1, 0.0
	for _, part := range strings.Split(header, ",") {
		fields := strings.Split(part, ";")
		rng := strings.ToLower(strings.TrimSpace(fields[0]))
		q := 1.0
		for _, p := range fields[1:] {
			k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
			if ok && strings.EqualFold(strings.TrimSpace(k), "q") {
				if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
					q = f
				}
			}
		}
		specificity := -1
		switch rng {
		case mediaType:
			specificity = 2
		case typ + "/*":
			specificity = 1
		case "*/*":
			specificity = 0
		}
		if specificity > best {
			best, bestQ = specificity, q
		}
	}
	return best >= 0 && bestQ > 0
}
