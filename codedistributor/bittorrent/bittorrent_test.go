package bittorrent_test

import (
	"testing"

	"github.com/nimbusha/nimbus/codedistributor/bittorrent"
	"github.com/nimbusha/nimbus/codedistributor/conformance"
	"github.com/nimbusha/nimbus/configs"
)

func TestConformance(t *testing.T) {
	conformance.Run(t, bittorrent.Name, func(cfg *configs.Config) {
		cfg.BittorrentPort = 0
		cfg.LocalHostname = "127.0.0.1"
	})
}
