package kafka

// Reserved header keys ("sluice-" is reserved for Sluice) that the
// connector sets on the dead letters of records it could not handle, next
// to sdk.HeaderError (what went wrong) and sdk.HeaderOperator.
const (
	// HeaderTopic names the Kafka topic the record came from (source) or
	// was meant for (sink).
	HeaderTopic = "sluice-kafka-topic"
	// HeaderPartition holds the record's partition, in decimal (source).
	HeaderPartition = "sluice-kafka-partition"
	// HeaderOffset holds the record's offset, in decimal (source).
	HeaderOffset = "sluice-kafka-offset"
)
