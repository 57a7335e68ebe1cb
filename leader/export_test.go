package leader

// FencedMulti lets tests check ZooKeeper's own fence, which a term's
// local end-of-term check would otherwise answer first.
var FencedMulti = fencedMulti
