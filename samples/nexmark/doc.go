// Package nexmark holds Nexmark benchmark queries on Sluice, with a
// deterministic generator following the Nexmark generator's published
// event distributions (see Generator) and an independent exact answer per
// query.
//
// Query 5, "hot items": the auctions with the most bids in each sliding
// window of 60 s every 10 s.
//
//	nexmark-source ──nexmark-events──▶ q5-bids ──q5-bids──▶ q5-counts ──q5-auction-counts──▶ q5-hot ──q5-hot-items──▶
//	   (events)               (keep bids, key:      (window.Hopping(60 s, 10 s),     (per window: the
//	                           auction)              window.Count(); results        auctions with the
//	                                                 keyed by window)                most bids)
//
// Query 8, "monitor new users": the persons who opened an auction in the
// 10 s tumbling window in which they registered (a window join of persons
// and auctions on person id = seller), as (person id, name, window start):
// one answer per person and window, however many auctions, as in the
// Flink nexmark suite's q8.sql (Beam's Query8 answers once per auction).
//
//	nexmark-source ──nexmark-events──▶ q8-keyed ──q8-keyed──▶ q8-join ──q8-windows──▶ q8-new-users ──q8-new-users──▶
//	   (events)              (keep persons, key: id;     (window.Tumbling(10 s):    (keep the windows
//	                          auctions, key: seller)      which sides a person's     that saw both)
//	                                                      window saw, and the name)
package nexmark
