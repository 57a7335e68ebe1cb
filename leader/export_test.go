package leader

// FencedMulti lets tests check ZooKeeper's own fence, which a term's
// local end-of-term check would otherwise answer first.
var FencedMulti = fencedMulti

// IsLeader reports whether a term is live right now: for tests' polling,
// never for deciding anything (a term can end the moment after).
func (e *Election) IsLeader() bool { return e.Current() != nil }
