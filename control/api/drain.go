package api

// DrainStatus is the answer of POST /v1/node/drain: the node answering
// runs no instance any more; the other members run them, with their
// state. It stays a member that nothing is placed on until it stops.
type DrainStatus struct {
	Node    string `json:"node"`
	Drained bool   `json:"drained"`
}
