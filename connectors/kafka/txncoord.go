package kafka

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicehq/sluice/internal/backoff"
)

// coordinatorTypeTxn is FindCoordinator's key type of transactional ids.
const coordinatorTypeTxn = 1

// txnCoordinator sends transaction requests for transactional ids whose
// producer is gone, as Kafka's own producer does when it resumes a
// transaction (and Flink's FlinkKafkaInternalProducer after a restore):
// EndTxn with the producer id and epoch a transaction was written with,
// and InitProducerID to fence an id. Each request goes to the id's
// transaction coordinator, found with FindCoordinator (key type 1), and
// is retried, with backoff until ctx ends, while the coordinator moves,
// loads or is still completing an earlier request on the id.
type txnCoordinator struct {
	cl *kgo.Client // any client of the cluster, not transactional
}

// endTxn commits (or aborts) the transaction that transactional id wrote
// as producer pid with epoch. The answers the brokers give when that
// transaction was already ended the same way count as success: NONE on a
// completed transaction (EndTxn v0–4), and the KIP-890 retry answer
// (epoch one ahead, transaction complete) on v5. When the transaction
// can no longer be ended that way (the id was fenced or re-initialised
// since, the brokers aborted it, or no longer know the id) it returns an
// error wrapping ErrTransactionLost.
func (c txnCoordinator) endTxn(ctx context.Context, id string, pid int64, epoch int16, commit bool) error {
	return c.retry(ctx, id, func(b *kgo.Broker) (int16, error) {
		req := kmsg.NewPtrEndTxnRequest()
		req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = id, pid, epoch, commit
		resp, err := b.Request(ctx, req)
		if err != nil {
			return 0, err
		}
		return resp.(*kmsg.EndTxnResponse).ErrorCode, nil
	})
}

// fence initialises transactional id afresh (InitProducerID without a
// producer id): the brokers bump its epoch, which aborts any transaction
// it has open and fences any producer still using it.
func (c txnCoordinator) fence(ctx context.Context, id string, timeout time.Duration) error {
	return c.retry(ctx, id, func(b *kgo.Broker) (int16, error) {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID = &id
		req.TransactionTimeoutMillis = int32(timeout / time.Millisecond)
		req.ProducerID, req.ProducerEpoch = -1, -1
		resp, err := b.Request(ctx, req)
		if err != nil {
			return 0, err
		}
		return resp.(*kmsg.InitProducerIDResponse).ErrorCode, nil
	})
}

// retry sends a request for transactional id to its coordinator until it
// gets a final answer or ctx ends.
func (c txnCoordinator) retry(ctx context.Context, id string, send func(*kgo.Broker) (int16, error)) error {
	delays := retryBackoff()
	for {
		b, err := c.find(ctx, id)
		var code int16
		if err == nil {
			code, err = send(b)
		}
		if err == nil {
			err = kerr.ErrorForCode(code)
			if err == nil {
				return nil
			}
			switch {
			case errors.Is(err, kerr.InvalidTxnState), errors.Is(err, kerr.ProducerFenced),
				errors.Is(err, kerr.InvalidProducerEpoch), errors.Is(err, kerr.InvalidProducerIDMapping),
				errors.Is(err, kerr.TransactionalIDNotFound), errors.Is(err, kerr.UnknownProducerID):
				return fmt.Errorf("%w: transactional id %q: %w", ErrTransactionLost, id, err)
			case errors.Is(err, kerr.InvalidTransactionTimeout):
				return fmt.Errorf("transactional id %q: %w: lower SinkConfig.TransactionTimeout or raise the brokers' transaction.max.timeout.ms", id, err)
			case !kerr.IsRetriable(err) && !errors.Is(err, kerr.ConcurrentTransactions):
				return fmt.Errorf("transactional id %q: %w", id, err)
			}
		}
		if ctx.Err() != nil {
			return fmt.Errorf("transactional id %q: %w (last: %v)", id, ctx.Err(), err)
		}
		if !backoff.Sleep(ctx, delays.Next()) {
			return fmt.Errorf("transactional id %q: %w (last: %v)", id, ctx.Err(), err)
		}
	}
}

// find returns the transaction coordinator of id.
func (c txnCoordinator) find(ctx context.Context, id string) (*kgo.Broker, error) {
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorType = coordinatorTypeTxn
	req.CoordinatorKey = id            // v0–3
	req.CoordinatorKeys = []string{id} // v4+
	resp, err := req.RequestWith(ctx, c.cl)
	if err != nil {
		return nil, fmt.Errorf("find the transaction coordinator: %w", err)
	}
	node, code := resp.NodeID, resp.ErrorCode
	if resp.Version >= 4 {
		if len(resp.Coordinators) != 1 {
			return nil, fmt.Errorf("find the transaction coordinator: %d answers for one id", len(resp.Coordinators))
		}
		node, code = resp.Coordinators[0].NodeID, resp.Coordinators[0].ErrorCode
	}
	if err := kerr.ErrorForCode(code); err != nil {
		return nil, fmt.Errorf("find the transaction coordinator: %w", err)
	}
	return c.cl.Broker(int(node)), nil
}
