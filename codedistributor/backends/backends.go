// Package backends registers every code distributor backend with package
// codedistributor, so that storm.codedistributor.class can name any of
// them: the daemons import it for that effect alone. A new backend is
// added here.
package backends

import (
	_ "github.com/nimbusha/nimbus/codedistributor/bittorrent" // bittorrent
	_ "github.com/nimbusha/nimbus/codedistributor/hdfs"       // hdfs
	_ "github.com/nimbusha/nimbus/codedistributor/localfs"    // localfs, the default
)
