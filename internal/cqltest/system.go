package cqltest

import "crypto/rand"

// The system tables gocql reads when it connects (system.local,
// system.peers) and that a client reads for the schema
// (system_schema.keyspaces, system_schema.columns), filled from the
// server's tables. Other system_schema tables are "unconfigured", so a
// driver's full schema refresh fails (gocql's token-aware policy then
// falls back to its child policy).

// ReleaseVersion is what system.local says the server is: 3.11, whose
// drivers read system.peers (not 4.0's system.peers_v2).
const ReleaseVersion = "3.11.16"

func uuid4() []byte {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return b
}

func (s *Server) systemTables() []*table {
	must := func(t Table) *table {
		tb, err := newTable(t)
		if err != nil {
			panic(err) // the system tables' schemas are constants
		}
		return tb
	}
	text := func(n string) Column { return Column{Name: n, Type: "text"} }
	local := must(Table{Keyspace: "system", Name: "local", Columns: []Column{
		{Name: "key", Type: "text", Kind: PartitionKey}, text("bootstrapped"), {Name: "broadcast_address", Type: "inet"},
		text("cluster_name"), text("cql_version"), text("data_center"), {Name: "host_id", Type: "uuid"},
		{Name: "listen_address", Type: "inet"}, text("native_protocol_version"), text("partitioner"), text("rack"),
		text("release_version"), {Name: "rpc_address", Type: "inet"}, {Name: "schema_version", Type: "uuid"},
		{Name: "tokens", Type: "set<text>"}}})
	lo := [4]byte{127, 0, 0, 1}
	row := map[string][]byte{"key": textValue("local"), "bootstrapped": textValue("COMPLETED"),
		"broadcast_address": inetValue(lo), "cluster_name": textValue("cqltest"), "cql_version": textValue("3.4.4"),
		"data_center": textValue("datacenter1"), "host_id": uuid4(), "listen_address": inetValue(lo),
		"native_protocol_version": textValue("4"), "partitioner": textValue("org.apache.cassandra.dht.Murmur3Partitioner"),
		"rack": textValue("rack1"), "release_version": textValue(ReleaseVersion), "rpc_address": inetValue(lo),
		"schema_version": uuid4(), "tokens": setOfText("0")}
	put(local, row)

	peers := must(Table{Keyspace: "system", Name: "peers", Columns: []Column{
		{Name: "peer", Type: "inet", Kind: PartitionKey}, text("data_center"), {Name: "host_id", Type: "uuid"},
		{Name: "preferred_ip", Type: "inet"}, text("rack"), text("release_version"), {Name: "rpc_address", Type: "inet"},
		{Name: "schema_version", Type: "uuid"}, {Name: "tokens", Type: "set<text>"}}})

	keyspaces := must(Table{Keyspace: "system_schema", Name: "keyspaces", Columns: []Column{
		{Name: "keyspace_name", Type: "text", Kind: PartitionKey}, {Name: "durable_writes", Type: "boolean"},
		{Name: "replication", Type: "map<text, text>"}}})
	columns := must(Table{Keyspace: "system_schema", Name: "columns", Columns: []Column{
		{Name: "keyspace_name", Type: "text", Kind: PartitionKey}, {Name: "table_name", Type: "text", Kind: Clustering},
		{Name: "column_name", Type: "text", Kind: Clustering}, text("clustering_order"), {Name: "column_name_bytes", Type: "blob"},
		text("kind"), {Name: "position", Type: "int"}, text("type")}})
	seen := map[string]bool{}
	for _, tb := range s.tables {
		if !seen[tb.ks] {
			seen[tb.ks] = true
			put(keyspaces, map[string][]byte{"keyspace_name": textValue(tb.ks), "durable_writes": {1},
				"replication": mapOfText("class", "org.apache.cassandra.locator.SimpleStrategy", "replication_factor", "1")})
		}
		for _, c := range tb.cols {
			order := "none"
			if c.Kind == Clustering {
				order = "asc"
			}
			put(columns, map[string][]byte{"keyspace_name": textValue(tb.ks), "table_name": textValue(tb.name),
				"column_name": textValue(c.Name), "clustering_order": textValue(order), "column_name_bytes": []byte(c.Name),
				"kind": textValue(c.Kind), "position": intValue(int32(c.position)), "type": textValue(c.typ.String())})
		}
	}
	return []*table{local, peers, keyspaces, columns}
}

// put inserts row (column name → value) into tb.
func put(tb *table, row map[string][]byte) {
	var cols []int
	var vals []value
	for n, b := range row {
		cols = append(cols, tb.idx[n])
		vals = append(vals, value{b: b})
	}
	tb.insert(cols, vals, 0)
}
