package cluster

import "github.com/go-zookeeper/zk"

// ListingOf is a Listing of any directory, for the tests of AwaitVersions,
// which list directories other than /storms.
func ListingOf(stat *zk.Stat, versions map[string]int32) Listing {
	return Listing{stat: stat, Versions: versions}
}
