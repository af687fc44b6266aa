package actors

import (
	"fmt"
	"time"

	"github.com/sluicehq/sluice/actors/wire"
	"github.com/sluicehq/sluice/persistence"
)

// handoffChunkBytes is the approximate size of one HandoffChunk.
const handoffChunkBytes = 256 << 10

// handoffChunkTimeout bounds the wait for a chunk's acknowledgement.
const handoffChunkTimeout = 30 * time.Second

// export ships the data of the key-group runs of req's operator to the
// requester, one acknowledged chunk at a time, then deletes it here. A run
// without data is still sent, as one empty chunk, so that the requester
// drops whatever stale data it had for those groups.
func (n *Node) export(req *wire.HandoffRequest, runs [][2]int) error {
	for _, r := range runs {
		first := true
		send := func(kvs []persistence.KV) error {
			chunk := &wire.HandoffChunk{Operator: req.Operator, FirstGroup: int32(r[0]), EndGroup: int32(r[1]), Replace: first}
			first = false
			chunk.Kvs = make([]*wire.KV, len(kvs))
			for i, kv := range kvs {
				chunk.Kvs[i] = &wire.KV{Key: kv.Key, Value: kv.Value}
			}
			res, err := n.system.Root.RequestFuture(req.ReplyTo, chunk, handoffChunkTimeout).Result()
			if err != nil {
				return fmt.Errorf("send chunk to %s: %w", req.Requester, err)
			}
			ack, ok := res.(*wire.HandoffAck)
			if !ok {
				return fmt.Errorf("send chunk to %s: unexpected answer %T", req.Requester, res)
			}
			if ack.Error != "" {
				return fmt.Errorf("%s could not store chunk: %s", req.Requester, ack.Error)
			}
			return nil
		}
		if err := n.db.ExportGroups(req.Operator, r[0], r[1], handoffChunkBytes, send); err != nil {
			return err
		}
		if first {
			if err := send(nil); err != nil {
				return err
			}
		}
		if err := n.db.DeleteGroups(req.Operator, r[0], r[1]); err != nil {
			return err
		}
	}
	return nil
}
