package mesostest

import (
	"errors"
	"fmt"
	"io"
	"strconv"
)

// errEmptyRecord is returned when asked to write a zero-length record. The
// scheduler HTTP API guarantees that "the length of an event ... will never
// be 0", and mesos-go's reader silently skips such records, so writing one
// would only hide a bug.
var errEmptyRecord = errors.New("mesostest: RecordIO record must not be empty")

// recordWriter writes the Mesos flavour of RecordIO (docs/recordio.md,
// "RecordIO response format" in scheduler-http-api.md):
//
//	record      = record-size LF record-data
//	record-size = 1*DIGIT   (decimal length of record-data in bytes)
//
// Each record is emitted with a single Write call so that, over a chunked
// HTTP response, a record never spans more chunks than necessary (not that
// the reader cares: intermediaries may re-chunk freely).
type recordWriter struct {
	w   io.Writer
	buf []byte
}

func newRecordWriter(w io.Writer) *recordWriter { return &recordWriter{w: w} }

// WriteRecord writes one record.
func (rw *recordWriter) WriteRecord(p []byte) error {
	if len(p) == 0 {
		return errEmptyRecord
	}
	rw.buf = strconv.AppendUint(rw.buf[:0], uint64(len(p)), 10)
	rw.buf = append(rw.buf, '\n')
	rw.buf = append(rw.buf, p...)
	n, err := rw.w.Write(rw.buf)
	if err != nil {
		return fmt.Errorf("writing RecordIO record of %d bytes: %w", len(p), err)
	}
	if n != len(rw.buf) {
		return fmt.Errorf("writing RecordIO record of %d bytes: %w", len(p), io.ErrShortWrite)
	}
	return nil
}
