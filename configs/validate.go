package configs

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// maxZKSessionTimeout bounds storm.zookeeper.session.timeout. ZooKeeper
// clamps the session to what the ensemble allows (20 ticks by default), so
// anything longer than a day is a typo, not a wish.
const maxZKSessionTimeout = 24 * time.Hour

// Validate checks every key and returns all problems joined, each a
// KeyError naming its key, so an operator can fix a file in one pass. It
// returns nil when c is usable.
func (c *Config) Validate() error {
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}

	// ZooKeeper.
	if len(c.ZKHosts) == 0 {
		add(invalid(KeyZKServers, "must not be empty"))
	}
	add(hostPorts(KeyZKServers, c.ZKHosts, false))
	add(inRange(KeyZKPort, c.ZKPort, 1, 65535))
	add(checkZKRoot(c.ZKRoot))
	add(positive(KeyZKSessionTimeout, c.ZKSessionTimeout))
	if c.ZKSessionTimeout > maxZKSessionTimeout {
		add(invalid(KeyZKSessionTimeout, "%v is longer than %v", c.ZKSessionTimeout, maxZKSessionTimeout))
	}
	add(positive(KeyZKConnectionTimeout, c.ZKConnectionTimeout))
	if c.LocalDir == "" {
		add(invalid(KeyLocalDir, "must not be empty"))
	}

	// Nimbus.
	add(checkHostName(KeyNimbusHost, c.NimbusHost))
	add(inRange(KeyNimbusGRPCPort, c.NimbusGRPCPort, 0, 65535))
	add(inRange(KeyNimbusMetricsPort, c.NimbusMetricsPort, PortDisabled, 65535))
	if c.NimbusMetricsPort > 0 && c.NimbusMetricsPort == c.NimbusGRPCPort {
		add(invalid(KeyNimbusMetricsPort, "%d is also %s", c.NimbusMetricsPort, KeyNimbusGRPCPort))
	}
	add(inRange(KeyUIPort, c.UIPort, PortDisabled, 65535))
	for key, port := range map[string]int{KeyNimbusGRPCPort: c.NimbusGRPCPort, KeyNimbusMetricsPort: c.NimbusMetricsPort} {
		if c.UIPort > 0 && c.UIPort == port {
			add(invalid(KeyUIPort, "%d is also %s", c.UIPort, key))
		}
	}
	add(inRange(KeyNimbusHealthPort, c.NimbusHealthPort, PortDisabled, 65535))
	for key, port := range map[string]int{KeyNimbusGRPCPort: c.NimbusGRPCPort, KeyNimbusMetricsPort: c.NimbusMetricsPort, KeyUIPort: c.UIPort} {
		if c.NimbusHealthPort > 0 && c.NimbusHealthPort == port {
			add(invalid(KeyNimbusHealthPort, "%d is also %s", c.NimbusHealthPort, key))
		}
	}
	if c.UIHost != "" && net.ParseIP(c.UIHost) == nil {
		add(invalid(KeyUIHost, "%q is not an IP address to bind", c.UIHost))
	}
	if len(c.NimbusSeeds) == 0 {
		add(invalid(KeyNimbusSeeds, "must not be empty"))
	}
	// A bare seed takes nimbus.grpc.port, which means nothing when it is 0.
	add(hostPorts(KeyNimbusSeeds, c.NimbusSeeds, c.NimbusGRPCPort == 0))
	add(positive(KeyNimbusDrainTimeout, c.NimbusDrainTimeout))
	if c.BlobstoreReplication < 1 || c.BlobstoreReplication > 100 {
		add(invalid(KeyBlobstoreReplication, "%d is not 1-100", c.BlobstoreReplication))
	}
	if c.BlobMaxBytes <= 0 {
		add(invalid(KeyBlobMaxBytes, "%d is not positive", c.BlobMaxBytes))
	}
	if c.LocalizerCacheTargetMB < 0 {
		add(invalid(KeyLocalizerCacheTargetMB, "%d is negative", c.LocalizerCacheTargetMB))
	}
	if c.NimbusMaxArtifactBytes <= 0 {
		add(invalid(KeyNimbusMaxArtifactBytes, "%d is not positive", c.NimbusMaxArtifactBytes))
	}

	// Topologies and scheduling.
	// Which classes exist, the registry of package codedistributor says
	// (the daemons check at start); here only that it can be a name.
	if c.CodeDistributorClass == "" || strings.ContainsFunc(c.CodeDistributorClass, unicode.IsSpace) {
		add(invalid(KeyCodeDistributorClass, "%q is not a code distributor's name", c.CodeDistributorClass))
	}
	if c.MinReplicationCount < 1 {
		add(invalid(KeyMinReplicationCount, "%d is less than 1", c.MinReplicationCount))
	}
	if c.CodeLostGraceSecs < WaitForever || c.CodeLostGraceSecs == 0 {
		add(invalid(KeyCodeLostGrace, "%d is neither positive nor -1 (-1 never marks a topology LOST)", c.CodeLostGraceSecs))
	}
	if c.SnapshotInterval < 0 {
		add(invalid(KeySnapshotInterval, "%v is negative (0 takes no snapshots)", c.SnapshotInterval))
	}
	if c.SnapshotRetain < 1 {
		add(invalid(KeySnapshotRetain, "%d is less than 1", c.SnapshotRetain))
	}
	if c.MaxReplicationWaitSecs < WaitForever {
		add(invalid(KeyMaxReplicationWait, "%d is less than -1 (-1 waits forever)", c.MaxReplicationWaitSecs))
	}
	add(positive(KeyTopologyMessageTimeout, c.TopologyMessageTimeout))
	add(positive(KeyCodeSyncFreq, c.CodeSyncFreq))
	add(positive(KeyMonitorFreq, c.MonitorFreq))
	add(positive(KeySupervisorTimeout, c.SupervisorTimeout))

	// Supervisors.
	add(checkSlots(c.SupervisorSlotsPorts))
	add(positive(KeySupervisorHeartbeat, c.SupervisorHeartbeat))
	add(positive(KeyWorkerShutdownSleep, c.WorkerShutdownSleep))
	add(inRange(KeySupervisorMetricsPort, c.SupervisorMetricsPort, PortDisabled, 65535))
	add(inRange(KeySupervisorGRPCPort, c.SupervisorGRPCPort, PortDisabled, 65535))
	add(checkSupervisorGRPCPort(c))
	add(inRange(KeyLogviewerPort, c.LogviewerPort, PortDisabled, 65535))
	add(checkLogviewerPort(c))
	if c.LogviewerMaxPerWorkerMB < 1 {
		add(invalid(KeyLogviewerMaxPerWorkerMB, "%d is less than 1", c.LogviewerMaxPerWorkerMB))
	}
	if c.LogviewerMaxSumMB < c.LogviewerMaxPerWorkerMB {
		add(invalid(KeyLogviewerMaxSumMB, "%d is less than %s (%d)", c.LogviewerMaxSumMB, KeyLogviewerMaxPerWorkerMB, c.LogviewerMaxPerWorkerMB))
	}
	add(positive(KeyLogviewerCleanupInterval, c.LogviewerCleanupInterval))
	add(checkHostName(KeyLocalHostname, c.LocalHostname))
	// Otherwise every supervisor would look dead between two heartbeats.
	if c.SupervisorHeartbeat > 0 && c.SupervisorTimeout > 0 && c.SupervisorTimeout <= c.SupervisorHeartbeat {
		add(invalid(KeySupervisorTimeout, "%v is not longer than %s (%v)",
			c.SupervisorTimeout, KeySupervisorHeartbeat, c.SupervisorHeartbeat))
	}

	// HDFS.
	if !strings.HasPrefix(c.HDFSStormDir, "/") {
		add(invalid(KeyHDFSStormDir, "%q is not an absolute path", c.HDFSStormDir))
	}
	if !strings.HasPrefix(c.BlobstoreDir, "/") || path.Clean(c.BlobstoreDir) == path.Clean(c.HDFSStormDir) {
		add(invalid(KeyBlobstoreDir, "%q is not an absolute path apart from %s", c.BlobstoreDir, KeyHDFSStormDir))
	}
	add(hostPorts(KeyHDFSNamenodeAddresses, c.HDFSNamenodeAddresses, false))
	if c.CodeDistributorClass == CodeDistributorHDFS && len(c.HDFSNamenodeAddresses) == 0 {
		add(invalid(KeyHDFSNamenodeAddresses, "must not be empty when %s is %s", KeyCodeDistributorClass, CodeDistributorHDFS))
	}
	if c.HDFSKerberosPrincipal != "" {
		add(invalid(KeyHDFSKerberosPrincipal, "Kerberos is not yet supported; leave it empty"))
	}
	if c.HDFSKerberosKeytab != "" {
		add(invalid(KeyHDFSKerberosKeytab, "Kerberos is not yet supported; leave it empty"))
	}

	// BitTorrent.
	add(inRange(KeyBittorrentPort, c.BittorrentPort, 0, 65535))
	add(checkTrackerURL(c.BittorrentTrackerURL))
	add(inRange(KeyBittorrentMaxUpload, c.BittorrentMaxUpload, 0, 1<<30))
	add(inRange(KeyBittorrentMaxDownload, c.BittorrentMaxDownload, 0, 1<<30))
	add(inRange(KeyBittorrentSeedPeers, c.BittorrentSeedPeers, 1, 1000))

	// Logging.
	add(oneOf(KeyLogLevel, c.LogLevel, "debug", "info", "warn", "error"))
	add(oneOf(KeyLogFormat, c.LogFormat, "text", "json"))

	c.validateSecurity(add)
	return errors.Join(errs...)
}

// ValidateServer checks what a daemon needs beyond Validate: with TLS on,
// a certificate of its own to serve with.
func (c *Config) ValidateServer() error {
	if c.TLSEnable && c.TLSCert == "" {
		return invalid(KeyTLSCert, "must be set when %s is true: a daemon serves with it", KeyTLSEnable)
	}
	return nil
}

// ValidateSupervisor checks what a supervisor needs beyond
// ValidateServer: with TLS on, its code port (specs with their confs,
// secrets included) is served only to authenticated callers, so it needs
// nimbus.grpc.tls.client.auth.required, or the port disabled. A supervisor
// cannot see whether its nimbuses require client certificates; TLS on says
// the cluster is meant to be secure.
func (c *Config) ValidateSupervisor() error {
	if c.TLSEnable && !c.TLSClientAuthRequired && c.SupervisorGRPCPort != PortDisabled {
		return invalid(KeySupervisorGRPCPort, "with %s on, this supervisor serves topology code (specs with their confs) only to authenticated nimbuses: "+
			"set %s: true, as on the nimbuses, or disable the code port with %s: -1", KeyTLSEnable, KeyTLSClientAuthRequired, KeySupervisorGRPCPort)
	}
	return nil
}

// validateSecurity checks the security keys: TLS, authorization, ZooKeeper
// ACLs, workers as users, and the limits that keep a request from taking
// a nimbus down.
func (c *Config) validateSecurity(add func(error)) {
	// A client may have no certificate of its own (a nimbus then answers it
	// UNAUTHENTICATED); a daemon may not (ValidateServer).
	if c.TLSEnable && c.TLSTruststore == "" {
		add(invalid(KeyTLSTruststore, "must be set when %s is true", KeyTLSEnable))
	}
	switch {
	case c.TLSCert == "" && c.TLSKey != "":
		add(invalid(KeyTLSCert, "must be set with %s", KeyTLSKey))
	case c.TLSCert != "" && c.TLSKey == "":
		add(invalid(KeyTLSKey, "must be set with %s", KeyTLSCert))
	}
	if c.TLSClientAuthRequired && !c.TLSEnable {
		add(invalid(KeyTLSClientAuthRequired, "needs %s: without TLS there is no certificate to authenticate", KeyTLSEnable))
	}
	add(oneOf(KeyTLSPrincipal, c.TLSPrincipal, PrincipalCN, PrincipalSANEmail, PrincipalSANDNS, PrincipalSANURI))
	for key, list := range map[string][]string{KeyNimbusAdmins: c.NimbusAdmins, KeyNimbusUsers: c.NimbusUsers,
		KeyNimbusSupervisorUsers: c.NimbusSupervisorUsers, KeyNimbusDaemonUsers: c.NimbusDaemonUsers, KeyLogsUsers: c.LogsUsers} {
		add(principals(key, list))
	}

	add(oneOf(KeyZKAuthScheme, c.ZKAuthScheme, "", ZKAuthDigest))
	if user, _, ok := strings.Cut(c.ZKAuthPayload, ":"); c.ZKAuthScheme == ZKAuthDigest && (!ok || user == "") {
		add(invalid(KeyZKAuthPayload, "must be user:password when %s is %s", KeyZKAuthScheme, ZKAuthDigest))
	}
	if c.ZKAuthScheme == "" && c.ZKAuthPayload != "" {
		add(invalid(KeyZKAuthPayload, "is set but %s is not", KeyZKAuthScheme))
	}
	if scheme, id, ok := strings.Cut(c.ZKSuperACL, ":"); c.ZKSuperACL != "" && (!ok || scheme == "" || id == "") {
		add(invalid(KeyZKSuperACL, "%q is not scheme:id", c.ZKSuperACL))
	}
	add(inRange(KeyZKMaxBuffer, c.ZKMaxBuffer, minZKMaxBuffer, math.MaxInt32))
	// The files are read at a daemon's start (internal/daemon), which
	// names the key of a file that cannot be used.
	if c.ZKSSLEnable && c.ZKSSLTruststore == "" {
		add(invalid(KeyZKSSLTruststore, "must be set when %s is true: it verifies ZooKeeper's certificate", KeyZKSSLEnable))
	}
	// Files named without TLS on are a TLS meant but not had.
	for _, file := range []struct{ key, path string }{{KeyZKSSLKeystore, c.ZKSSLKeystore}, {KeyZKSSLTruststore, c.ZKSSLTruststore}} {
		if !c.ZKSSLEnable && file.path != "" {
			add(invalid(file.key, "is set but %s is false: set it to true to reach ZooKeeper over TLS", KeyZKSSLEnable))
		}
	}

	add(oneOf(KeyPrincipalToLocal, c.PrincipalToLocal, "", PrincipalToLocalDefault, PrincipalToLocalKerberos,
		stormDefaultPrincipalToLocal, stormKerberosPrincipalToLocal))
	for _, name := range c.SupervisorWorkerEnv {
		if !isEnvName(name) {
			add(invalid(KeySupervisorWorkerEnv, "%q is not an environment variable's name", name))
		}
	}

	add(inRange(KeyNimbusMaxUploads, c.NimbusMaxUploads, 1, 1<<16))
	add(positive(KeyNimbusUploadIdleTimeout, c.NimbusUploadIdleTimeout))
	add(inRange(KeyNimbusMaxStreams, c.NimbusMaxStreams, 1, 1<<20))
	add(inRange(KeyNimbusMaxMessageBytes, c.NimbusMaxMessageBytes, minMessageBytes, math.MaxInt32))
	add(inRange(KeyUIMaxConnections, c.UIMaxConnections, 1, 1<<20))
	add(inRange(KeyNimbusMaxWatches, c.NimbusMaxWatches, 1, 1<<16))
}

// Bounds of the limits: ZooKeeper nodes at least as large as a StormBase
// needs, and messages that carry a full artifact chunk (1 MiB) and more.
const (
	minZKMaxBuffer  = 64 << 10
	minMessageBytes = 1<<20 + 64<<10
)

// principals checks a list of principals: each a non-empty name without
// control characters or commas (lists from the environment split on them).
func principals(key string, list []string) error {
	for _, p := range list {
		if p == "" || strings.ContainsAny(p, ",") || strings.ContainsFunc(p, unicode.IsControl) {
			return invalid(key, "%q is not a principal", p)
		}
	}
	return nil
}

// isEnvName reports whether s is a portable environment variable name.
func isEnvName(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for _, r := range s {
		if !(r == '_' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// invalid makes a validation error that names key; Load adds where the
// key's value came from.
func invalid(key, format string, args ...any) error {
	return &KeyError{Key: key, Err: fmt.Errorf(format, args...)}
}

func inRange(key string, v, lo, hi int) error {
	if v < lo || v > hi {
		return invalid(key, "%d is out of range %d..%d", v, lo, hi)
	}
	return nil
}

func positive(key string, d time.Duration) error {
	if d <= 0 {
		return invalid(key, "%v is not positive", d)
	}
	return nil
}

func oneOf(key, v string, valid ...string) error {
	if !slices.Contains(valid, v) {
		return invalid(key, "%q is not one of %s", v, strings.Join(valid, ", "))
	}
	return nil
}

// hostPorts checks each host or host:port entry; needPort rejects bare hosts.
func hostPorts(key string, entries []string, needPort bool) error {
	for _, e := range entries {
		_, port, err := splitHostPort(e)
		if err != nil {
			return invalid(key, "%q is not host or host:port: %v", e, err)
		}
		if needPort && port == 0 {
			return invalid(key, "%q has no port and %s is 0", e, KeyNimbusGRPCPort)
		}
	}
	return nil
}

// splitHostPort parses host or host:port; port is 0 when absent. A bare
// IPv6 address is a host; with a port it must be bracketed.
func splitHostPort(s string) (host string, port int, err error) {
	if net.ParseIP(s) != nil || (s != "" && !strings.Contains(s, ":")) {
		return s, 0, checkHost(s)
	}
	host, portText, err := net.SplitHostPort(s)
	if err != nil {
		return "", 0, err
	}
	if err := checkHost(host); err != nil {
		return "", 0, err
	}
	port, err = strconv.Atoi(portText)
	if err != nil || port < 1 || port > 65535 {
		return "", 0, fmt.Errorf("port %q is not in 1..65535", portText)
	}
	return host, port, nil
}

func checkHost(h string) error {
	switch {
	case h == "":
		return errors.New("empty host")
	case strings.ContainsAny(h, " \t\r\n,/[]"):
		// A comma separates hosts in the environment and flags; a
		// bracket is only for an IPv6 address with a port, and
		// net.SplitHostPort has taken it off.
		return fmt.Errorf("host %q has a blank, ',', '/', '[' or ']'", h)
	case strings.Contains(h, ":") && net.ParseIP(h) == nil:
		return fmt.Errorf("host %q is not an IPv6 address", h)
	}
	return nil
}

// checkHostName accepts a host name that others dial with a port joined
// on: nimbus.host, storm.local.hostname.
func checkHostName(key, h string) error {
	if h == "" || strings.ContainsAny(h, " \t\r\n:/[]") {
		return invalid(key, "%q is not a host name (empty, or has a blank, ':', '/', '[' or ']')", h)
	}
	return nil
}

// checkZKRoot accepts a normalised absolute ZooKeeper path below "/", so the
// daemons can join child names onto it without surprises.
func checkZKRoot(root string) error {
	bad := func(why string) error { return invalid(KeyZKRoot, "%q %s", root, why) }
	switch {
	case !strings.HasPrefix(root, "/"):
		return bad("does not start with '/'")
	case root == "/":
		return bad("is the ZooKeeper root; use a path below it")
	case strings.HasSuffix(root, "/"):
		return bad("ends with '/'")
	}
	segs := strings.Split(root[1:], "/")
	for _, seg := range segs {
		switch seg {
		case "":
			return bad("has an empty segment")
		case ".", "..":
			return bad("has a '.' or '..' segment")
		}
	}
	if segs[0] == "zookeeper" {
		return bad("is under /zookeeper, which ZooKeeper reserves")
	}
	return nil
}

func checkSlots(ports []int) error {
	seen := map[int]bool{}
	for _, p := range ports {
		if err := inRange(KeySupervisorSlotsPorts, p, 1, 65535); err != nil {
			return err
		}
		if seen[p] {
			return invalid(KeySupervisorSlotsPorts, "%d is listed twice", p)
		}
		seen[p] = true
	}
	return nil
}

// checkSupervisorGRPCPort: a fixed code port must not be the metrics port
// or a worker slot, or the supervisor (or the worker) cannot bind.
func checkSupervisorGRPCPort(c *Config) error {
	p := c.SupervisorGRPCPort
	switch {
	case p <= 0:
		return nil
	case p == c.SupervisorMetricsPort:
		return invalid(KeySupervisorGRPCPort, "%d is also %s", p, KeySupervisorMetricsPort)
	case slices.Contains(c.SupervisorSlotsPorts, p):
		return invalid(KeySupervisorGRPCPort, "%d is also one of %s", p, KeySupervisorSlotsPorts)
	}
	return nil
}

// checkLogviewerPort: a fixed logviewer port must not be another of the
// supervisor's ports or a worker slot.
func checkLogviewerPort(c *Config) error {
	p := c.LogviewerPort
	switch {
	case p <= 0:
		return nil
	case p == c.SupervisorMetricsPort:
		return invalid(KeyLogviewerPort, "%d is also %s", p, KeySupervisorMetricsPort)
	case p == c.SupervisorGRPCPort:
		return invalid(KeyLogviewerPort, "%d is also %s", p, KeySupervisorGRPCPort)
	case slices.Contains(c.SupervisorSlotsPorts, p):
		return invalid(KeyLogviewerPort, "%d is also one of %s", p, KeySupervisorSlotsPorts)
	}
	return nil
}

func checkTrackerURL(s string) error {
	if s == "" {
		return nil // no tracker
	}
	u, err := url.Parse(s)
	if err != nil {
		return invalid(KeyBittorrentTrackerURL, "%q is not a URL: %v", s, err)
	}
	if !slices.Contains([]string{"http", "https", "udp"}, u.Scheme) || u.Host == "" {
		return invalid(KeyBittorrentTrackerURL, "%q is not an http, https or udp URL with a host", s)
	}
	return nil
}
