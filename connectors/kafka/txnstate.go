package kafka

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/sdk"
)

// State kept by an exactly-once sink instance, all in its first key group
// (where the runtime puts the writes of Init, PreCommit and Commit):
//
//	kafka/txn/<transactional id>      → txnEntry (22 bytes): a transaction
//	                                    prepared by PreCommit, not yet committed
//	kafka/txnpool/<prefix>.<group>    → size u32, key group u32 (8 bytes): the
//	                                    instance's pool, so that whoever
//	                                    holds this state later fences its ids
//	kafka/txndone/<transactional id>  → txnEntry: a transaction of another
//	                                    key group's state (after a rescale)
//	                                    that this instance committed; that
//	                                    state cannot be changed from here
//
// Integers are big endian.
const (
	txnPrefix     = "kafka/txn/"
	txnPoolPrefix = "kafka/txnpool/"
	txnDonePrefix = "kafka/txndone/"
)

// txnEntry is a prepared transaction: what Commit needs to commit it
// without the producer that wrote it.
type txnEntry struct {
	checkpoint uint64 // the checkpoint PreCommit prepared it for
	producerID int64
	epoch      int16
	group      int // the key group whose state holds the entry
}

const txnEntrySize = 8 + 8 + 2 + 4

func (e txnEntry) encode() []byte {
	b := make([]byte, 0, txnEntrySize)
	b = binary.BigEndian.AppendUint64(b, e.checkpoint)
	b = binary.BigEndian.AppendUint64(b, uint64(e.producerID))
	b = binary.BigEndian.AppendUint16(b, uint16(e.epoch))
	return binary.BigEndian.AppendUint32(b, uint32(e.group))
}

func decodeTxnEntry(b []byte) (txnEntry, error) {
	if len(b) != txnEntrySize {
		return txnEntry{}, fmt.Errorf("transaction entry has %d bytes, want %d", len(b), txnEntrySize)
	}
	return txnEntry{
		checkpoint: binary.BigEndian.Uint64(b),
		producerID: int64(binary.BigEndian.Uint64(b[8:])),
		epoch:      int16(binary.BigEndian.Uint16(b[16:])),
		group:      int(binary.BigEndian.Uint32(b[18:])),
	}, nil
}

// txnID returns the k-th transactional id of pool.
func txnID(pool string, k int) string { return pool + "." + strconv.Itoa(k) }

// txnState is what an exactly-once sink instance finds in its state in
// Init.
type txnState struct {
	entries map[string]txnEntry // prepared transactions, by transactional id
	pools   map[string]int      // pools, by name → size
	done    map[string]txnEntry // committed transactions of other key groups' state
}

// readTxnState scans st (every key group the instance owns).
func readTxnState(st sdk.State) (txnState, error) {
	ts := txnState{entries: map[string]txnEntry{}, pools: map[string]int{}, done: map[string]txnEntry{}}
	err := sdk.ScanAllGroups(st, []byte("kafka/txn"), func(key, value []byte) error {
		k := string(key)
		switch {
		case strings.HasPrefix(k, txnPrefix):
			e, err := decodeTxnEntry(value)
			if err != nil {
				return fmt.Errorf("%s: %w", k, err)
			}
			ts.entries[k[len(txnPrefix):]] = e
		case strings.HasPrefix(k, txnDonePrefix):
			e, err := decodeTxnEntry(value)
			if err != nil {
				return fmt.Errorf("%s: %w", k, err)
			}
			ts.done[k[len(txnDonePrefix):]] = e
		case strings.HasPrefix(k, txnPoolPrefix):
			if len(value) != 8 {
				return fmt.Errorf("%s: pool entry has %d bytes, want 8", k, len(value))
			}
			name := k[len(txnPoolPrefix):]
			ts.pools[name] = max(ts.pools[name], int(binary.BigEndian.Uint32(value)))
		}
		return nil
	})
	// Transactions another instance committed are not pending any more.
	for id, d := range ts.done {
		if e, ok := ts.entries[id]; ok && e == d {
			delete(ts.entries, id)
		}
	}
	return ts, err
}

func poolValue(size, group int) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(size))
	return binary.BigEndian.AppendUint32(b, uint32(group))
}
