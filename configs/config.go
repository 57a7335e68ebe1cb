package configs

import (
	"net"
	"os"
	"strconv"
	"strings"
	"time"
)

// Keys, spelled as in Storm so an existing storm.yaml keeps working.
const (
	KeyZKServers              = "storm.zookeeper.servers"
	KeyZKPort                 = "storm.zookeeper.port"
	KeyZKRoot                 = "storm.zookeeper.root"
	KeyZKSessionTimeout       = "storm.zookeeper.session.timeout"
	KeyZKConnectionTimeout    = "storm.zookeeper.connection.timeout"
	KeyLocalDir               = "storm.local.dir"
	KeyNimbusHost             = "nimbus.host"
	KeyNimbusGRPCPort         = "nimbus.grpc.port"
	KeyNimbusMetricsPort      = "nimbus.metrics.port"
	KeyNimbusSeeds            = "nimbus.seeds"
	KeyUIPort                 = "ui.port"
	KeyNimbusHealthPort       = "nimbus.health.port" // ours: the gRPC health service alone, plaintext, for probes without TLS
	KeyUIHost                 = "ui.host"
	KeyUIActionsEnabled       = "ui.actions.enabled"
	KeyNimbusDrainTimeout     = "nimbus.drain.timeout.secs"
	KeyNimbusMaxArtifactBytes = "nimbus.max.artifact.bytes"
	KeyCodeDistributorClass   = "storm.codedistributor.class"
	KeyMinReplicationCount    = "topology.min.replication.count"
	KeyMaxReplicationWait     = "topology.max.replication.wait.time.sec"
	KeyTopologyMessageTimeout = "topology.message.timeout.secs"
	KeyCodeSyncFreq           = "nimbus.code.sync.freq.secs"
	KeyCodeLostGrace          = "nimbus.code.lost.grace.secs"
	KeySnapshotInterval       = "nimbus.snapshot.interval.secs"
	KeySnapshotRetain         = "nimbus.snapshot.retain"
	KeyMonitorFreq            = "nimbus.monitor.freq.secs"
	KeySupervisorTimeout      = "nimbus.supervisor.timeout.secs"
	KeySupervisorSlotsPorts   = "supervisor.slots.ports"
	KeySupervisorHeartbeat    = "supervisor.heartbeat.frequency.secs"
	KeyLocalHostname          = "storm.local.hostname"
	KeyWorkerShutdownSleep    = "supervisor.worker.shutdown.sleep.secs"
	KeySupervisorMetricsPort  = "supervisor.metrics.port"
	KeySupervisorGRPCPort     = "supervisor.grpc.port"
	KeyHDFSStormDir           = "hdfs.storm.dir"
	// Blobs (docs/ARCHITECTURE.md section 24): Storm's names, and one of
	// ours for the largest blob.
	KeyBlobstoreReplication   = "storm.blobstore.replication.factor"
	KeyBlobstoreDir           = "blobstore.dir"
	KeyBlobMaxBytes           = "nimbus.blobstore.max.blob.bytes"
	KeyLocalizerCacheTargetMB = "supervisor.localizer.cache.target.size.mb"
	KeyHDFSNamenodeAddresses  = "hdfs.namenode.addresses"
	KeyHDFSUser               = "hdfs.user"
	KeyHDFSKerberosPrincipal  = "hdfs.kerberos.principal"
	KeyHDFSKerberosKeytab     = "hdfs.kerberos.keytab"
	KeyBittorrentPort         = "bittorrent.port"
	KeyBittorrentTrackerURL   = "bittorrent.tracker.url"
	KeyBittorrentMaxUpload    = "bittorrent.max.upload.rate"
	KeyBittorrentMaxDownload  = "bittorrent.max.download.rate"
	KeyBittorrentSeedPeers    = "bittorrent.seed.max.peers"
	KeyLogLevel               = "log.level"
	KeyLogFormat              = "log.format"

	// Security: TLS and authentication on gRPC (Storm's nimbus.thrift.tls.*
	// keys, for gRPC and PEM files), authorization (Storm's names),
	// ZooKeeper ACLs (Storm's names), workers as users (Storm's names).
	KeyTLSEnable               = "nimbus.grpc.tls.enable"
	KeyTLSCert                 = "nimbus.grpc.tls.cert.path"
	KeyTLSKey                  = "nimbus.grpc.tls.key.path"
	KeyTLSTruststore           = "nimbus.grpc.tls.truststore.path"
	KeyTLSClientAuthRequired   = "nimbus.grpc.tls.client.auth.required"
	KeyTLSPrincipal            = "nimbus.grpc.tls.principal"
	KeyNimbusAdmins            = "nimbus.admins"
	KeyNimbusUsers             = "nimbus.users"
	KeyNimbusSupervisorUsers   = "nimbus.supervisor.users"
	KeyNimbusDaemonUsers       = "nimbus.daemon.users"
	KeyMetricsPprof            = "storm.metrics.pprof.enable"
	KeyZKAuthScheme            = "storm.zookeeper.auth.scheme"
	KeyZKAuthPayload           = "storm.zookeeper.auth.payload"
	KeyZKSuperACL              = "storm.zookeeper.superACL"
	KeyZKMaxBuffer             = "storm.zookeeper.jute.maxbuffer"
	KeyRunWorkerAsUser         = "supervisor.run.worker.as.user"
	KeyPrincipalToLocal        = "storm.principal.tolocal"
	KeySupervisorWorkerEnv     = "supervisor.worker.env"
	KeyNimbusMaxUploads        = "nimbus.max.concurrent.uploads"
	KeyNimbusUploadIdleTimeout = "nimbus.upload.idle.timeout.secs"
	KeyNimbusMaxStreams        = "nimbus.grpc.max.concurrent.streams"
	KeyNimbusMaxMessageBytes   = "nimbus.grpc.max_buffer_size"
	// Ours (Storm has no such bounds): connections the REST API and UI
	// serve at once, and health Watch streams one caller may hold.
	KeyUIMaxConnections     = "ui.max.connections"
	KeyNimbusMaxWatches     = "nimbus.grpc.max.watch.streams"
	DefaultUIMaxConnections = 256
	DefaultNimbusMaxWatches = 16

	// The logviewer: workers' logs served by every supervisor (Storm's
	// names).
	KeyLogviewerPort            = "logviewer.port"
	KeyLogviewerMaxPerWorkerMB  = "logviewer.max.per.worker.logs.size.mb"
	KeyLogviewerMaxSumMB        = "logviewer.max.sum.worker.logs.size.mb"
	KeyLogviewerCleanupInterval = "logviewer.cleanup.interval.secs"
	KeyLogsUsers                = "logs.users"
)

// TLS to ZooKeeper's secureClientPort: Storm's names, for PEM files where
// Storm reads Java keystores.
const (
	KeyZKSSLEnable               = "storm.zookeeper.ssl.enable"
	KeyZKSSLKeystore             = "storm.zookeeper.ssl.keystore.path"
	KeyZKSSLTruststore           = "storm.zookeeper.ssl.truststore.path"
	KeyZKSSLHostnameVerification = "storm.zookeeper.ssl.hostnameVerification"
)

// Keys of a topology's own conf (TopologySpec.config) that Nimbus-HA reads.
const (
	// TopologyUsers may act on the topology as its owner does (comma-separated).
	TopologyUsers = "topology.users"
	// TopologyEnvironment is extra environment for its workers, as
	// comma-separated NAME=value pairs.
	TopologyEnvironment = "topology.environment"
	// TopologyLogsUsers may read the topology's worker logs, besides its
	// owner and topology.users (comma-separated; Storm's logs.users set
	// in a topology's conf).
	TopologyLogsUsers = "logs.users"
)

// Defaults. List-valued defaults are spelled out in Default.
const (
	DefaultZKServer               = "localhost"
	DefaultZKPort                 = 2181
	DefaultZKRoot                 = "/storm"
	DefaultZKSessionTimeout       = 20 * time.Second
	DefaultZKConnectionTimeout    = 15 * time.Second
	DefaultLocalDir               = "storm-local"
	DefaultNimbusHost             = "localhost" // only when os.Hostname fails
	DefaultNimbusGRPCPort         = 6627
	DefaultNimbusMetricsPort      = 6628
	DefaultNimbusSeed             = "localhost:6627"
	DefaultUIPort                 = 8080 // Storm's
	DefaultNimbusDrainTimeout     = 10 * time.Second
	DefaultNimbusMaxArtifactBytes = 512 << 20
	DefaultCodeDistributorClass   = "localfs"
	DefaultMinReplicationCount    = 1
	DefaultMaxReplicationWaitSecs = 60
	DefaultTopologyMessageTimeout = 30 * time.Second
	DefaultCodeSyncFreq           = 120 * time.Second
	DefaultCodeLostGraceSecs      = 300
	// The leader's snapshots: every 5 minutes, when something changed,
	// and the last 288 of them (at least a day of changes every 5
	// minutes; a quiet cluster's last snapshot is not repeated, so they
	// reach back much further). A snapshot without code is small (a few
	// MB at 1,000 topologies): cheap to keep, and a wiped root restored
	// from it loses at most 5 minutes of changes.
	DefaultSnapshotInterval      = 5 * time.Minute
	DefaultSnapshotRetain        = 288
	DefaultMonitorFreq           = 10 * time.Second
	DefaultSupervisorTimeout     = 60 * time.Second
	DefaultSupervisorHeartbeat   = 5 * time.Second
	DefaultWorkerShutdownSleep   = 3 * time.Second
	DefaultSupervisorMetricsPort = 6629
	DefaultSupervisorGRPCPort    = 6630
	// Storm's logviewer.port: operators' firewall rules and habits carry
	// over, and it is clear of every other default port here.
	DefaultLogviewerPort = 8000
	// Storm's caps: a worker's logs (worker.log and its rotated files)
	// and all workers' logs of a supervisor, in MiB.
	DefaultLogviewerMaxPerWorkerMB  = 2048
	DefaultLogviewerMaxSumMB        = 4096
	DefaultLogviewerCleanupInterval = 10 * time.Minute // Storm's 600 s
	DefaultHDFSStormDir             = "/storm"
	DefaultBlobstoreReplication     = 3 // Storm's
	DefaultBlobstoreDir             = "/storm-blobstore"
	DefaultBlobMaxBytes             = 2 << 30
	DefaultLocalizerCacheTargetMB   = 10240 // Storm's
	DefaultBittorrentPort           = 6881
	DefaultBittorrentSeedPeers      = 2
	DefaultLogLevel                 = "info"
	DefaultLogFormat                = "text"
	DefaultTLSPrincipal             = PrincipalCN
	DefaultZKMaxBuffer              = 1<<20 - 1 // ZooKeeper's own default jute.maxbuffer
	DefaultNimbusMaxUploads         = 8
	DefaultNimbusUploadIdleTimout   = 30 * time.Second
	DefaultNimbusMaxStreams         = 1000
	DefaultNimbusMaxMessageBytes    = 4 << 20 // a 1 MiB chunk and room to spare
)

// What part of a client certificate names its principal
// (nimbus.grpc.tls.principal).
const (
	PrincipalCN       = "cn"        // the subject's common name
	PrincipalSANEmail = "san.email" // the first e-mail subject alternative name
	PrincipalSANDNS   = "san.dns"   // the first DNS subject alternative name
	PrincipalSANURI   = "san.uri"   // the first URI subject alternative name (a SPIFFE id, say)
)

// Values of storm.principal.tolocal: a principal as it is, or its part
// before any '/' or '@' (user/host@REALM -> user). Storm's class names for
// the two are accepted too.
const (
	PrincipalToLocalDefault  = "default"
	PrincipalToLocalKerberos = "kerberos"

	stormDefaultPrincipalToLocal  = "org.apache.storm.security.auth.DefaultPrincipalToLocal"
	stormKerberosPrincipalToLocal = "org.apache.storm.security.auth.KerberosPrincipalToLocal"
)

// LocalUser maps principal to a local user name by storm.principal.tolocal.
func (c *Config) LocalUser(principal string) string {
	switch c.PrincipalToLocal {
	case PrincipalToLocalKerberos, stormKerberosPrincipalToLocal:
		if i := strings.IndexAny(principal, "/@"); i >= 0 {
			return principal[:i]
		}
	}
	return principal
}

// SecureGRPC reports whether callers are authenticated (and authorized).
func (c *Config) SecureGRPC() bool { return c.TLSEnable && c.TLSClientAuthRequired }

// ZKAuthDigest is the one storm.zookeeper.auth.scheme supported: ZooKeeper's
// digest scheme, a "user:password" payload.
const ZKAuthDigest = "digest"

// Special values.
const (
	// PortDisabled as a port (nimbus.metrics.port, ui.port,
	// supervisor.metrics.port, supervisor.grpc.port) turns its listener off.
	PortDisabled = -1
	// WaitForever as topology.max.replication.wait.time.sec waits for
	// topology.min.replication.count without a time limit.
	WaitForever = -1
)

// CodeDistributorHDFS is the storm.codedistributor.class that needs the
// hdfs.* keys. Which classes exist is for package codedistributor's
// registry to say: the daemons check the class against it at start.
const CodeDistributorHDFS = "hdfs"

// Config holds one field per key. Durations are already converted from the
// key's unit; everything else is as written.
type Config struct {
	ZKHosts             []string      // storm.zookeeper.servers: host or host:port; see ZKServers
	ZKPort              int           // storm.zookeeper.port: port for hosts without one
	ZKRoot              string        // storm.zookeeper.root
	ZKSessionTimeout    time.Duration // storm.zookeeper.session.timeout (ms)
	ZKConnectionTimeout time.Duration // storm.zookeeper.connection.timeout (ms)
	LocalDir            string        // storm.local.dir

	NimbusHost             string        // nimbus.host: name others use to reach this nimbus
	NimbusGRPCPort         int           // nimbus.grpc.port: 0 picks a free port
	NimbusMetricsPort      int           // nimbus.metrics.port: 0 picks a free port, -1 disables
	NimbusSeeds            []string      // nimbus.seeds: host or host:port; see SeedAddrs
	UIPort                 int           // ui.port: the REST API and web UI; 0 picks a free port, -1 disables
	NimbusHealthPort       int           // nimbus.health.port: plaintext gRPC health only; -1 (the default) disables
	UIHost                 string        // ui.host: the address to bind; empty binds as nimbus.grpc.port does
	UIActionsEnabled       bool          // ui.actions.enabled: false refuses the REST API's POSTs
	NimbusDrainTimeout     time.Duration // nimbus.drain.timeout.secs: wait for in-flight RPCs on stop
	NimbusMaxArtifactBytes int64         // nimbus.max.artifact.bytes

	CodeDistributorClass   string        // storm.codedistributor.class
	MinReplicationCount    int           // topology.min.replication.count
	MaxReplicationWaitSecs int           // topology.max.replication.wait.time.sec: -1 = forever; see MaxReplicationWait
	CodeLostGraceSecs      int           // nimbus.code.lost.grace.secs: -1 = never mark LOST; see CodeLostGrace
	SnapshotInterval       time.Duration // nimbus.snapshot.interval.secs: the leader's snapshots; 0 = none
	SnapshotRetain         int           // nimbus.snapshot.retain: how many the leader keeps
	TopologyMessageTimeout time.Duration // topology.message.timeout.secs
	CodeSyncFreq           time.Duration // nimbus.code.sync.freq.secs
	MonitorFreq            time.Duration // nimbus.monitor.freq.secs
	SupervisorTimeout      time.Duration // nimbus.supervisor.timeout.secs

	SupervisorSlotsPorts  []int         // supervisor.slots.ports
	SupervisorHeartbeat   time.Duration // supervisor.heartbeat.frequency.secs
	LocalHostname         string        // storm.local.hostname: what a supervisor advertises
	WorkerShutdownSleep   time.Duration // supervisor.worker.shutdown.sleep.secs: SIGTERM to SIGKILL
	SupervisorMetricsPort int           // supervisor.metrics.port: 0 picks a free port, -1 disables
	SupervisorGRPCPort    int           // supervisor.grpc.port: its code, read-only to nimbuses; 0 picks a free port, -1 disables

	LogviewerPort            int           // logviewer.port: workers' logs over HTTP(S); 0 picks a free port, -1 disables
	LogviewerMaxPerWorkerMB  int           // logviewer.max.per.worker.logs.size.mb: one worker's log files together
	LogviewerMaxSumMB        int           // logviewer.max.sum.worker.logs.size.mb: all workers' log files of a supervisor
	LogviewerCleanupInterval time.Duration // logviewer.cleanup.interval.secs: how often the sum is enforced
	LogsUsers                []string      // logs.users: principals that may read every topology's worker logs

	HDFSStormDir           string   // hdfs.storm.dir
	BlobstoreReplication   int      // storm.blobstore.replication.factor
	BlobstoreDir           string   // blobstore.dir (HDFS)
	BlobMaxBytes           int64    // nimbus.blobstore.max.blob.bytes
	LocalizerCacheTargetMB int64    // supervisor.localizer.cache.target.size.mb
	HDFSNamenodeAddresses  []string // hdfs.namenode.addresses
	HDFSUser               string   // hdfs.user
	HDFSKerberosPrincipal  string   // hdfs.kerberos.principal: reserved, must be empty
	HDFSKerberosKeytab     string   // hdfs.kerberos.keytab: reserved, must be empty

	BittorrentPort        int    // bittorrent.port: 0 picks a free port
	BittorrentTrackerURL  string // bittorrent.tracker.url: http, https or udp; empty = no tracker
	BittorrentMaxUpload   int    // bittorrent.max.upload.rate: KiB/s; 0 = unlimited
	BittorrentMaxDownload int    // bittorrent.max.download.rate: KiB/s; 0 = unlimited
	BittorrentSeedPeers   int    // bittorrent.seed.max.peers: downloaders a seed serves at once, per topology

	LogLevel  string // log.level: debug, info, warn, error
	LogFormat string // log.format: text, json

	TLSEnable             bool     // nimbus.grpc.tls.enable: every gRPC listener and client speaks TLS
	TLSCert               string   // nimbus.grpc.tls.cert.path: this process's certificate (PEM, chain allowed)
	TLSKey                string   // nimbus.grpc.tls.key.path: its private key (PEM)
	TLSTruststore         string   // nimbus.grpc.tls.truststore.path: CA certificates that verify peers (PEM)
	TLSClientAuthRequired bool     // nimbus.grpc.tls.client.auth.required: callers must present a certificate; authentication and authorization on
	TLSPrincipal          string   // nimbus.grpc.tls.principal: which part of a certificate names its principal
	NimbusAdmins          []string // nimbus.admins: may do everything
	NimbusUsers           []string // nimbus.users: may submit; empty = any authenticated principal
	NimbusSupervisorUsers []string // nimbus.supervisor.users: supervisors, which fetch code
	NimbusDaemonUsers     []string // nimbus.daemon.users: the nimbuses, which fetch code from each other
	MetricsPprof          bool     // storm.metrics.pprof.enable: serve pprof on the metrics port

	ZKAuthScheme  string // storm.zookeeper.auth.scheme: "" or digest
	ZKAuthPayload string // storm.zookeeper.auth.payload: user:password for digest; a secret
	ZKSuperACL    string // storm.zookeeper.superACL: scheme:id given every permission too, e.g. digest:admin:<hash>
	ZKMaxBuffer   int    // storm.zookeeper.jute.maxbuffer: the largest node ZooKeeper accepts, in bytes

	ZKSSLEnable               bool   // storm.zookeeper.ssl.enable: the session speaks TLS only, to secureClientPort
	ZKSSLKeystore             string // storm.zookeeper.ssl.keystore.path: this process's certificate chain and key, one PEM file
	ZKSSLTruststore           string // storm.zookeeper.ssl.truststore.path: CA certificates that verify ZooKeeper (PEM)
	ZKSSLHostnameVerification bool   // storm.zookeeper.ssl.hostnameVerification: ZooKeeper's certificate must name the host dialed

	RunWorkerAsUser     bool     // supervisor.run.worker.as.user: workers run as their owner's local user
	PrincipalToLocal    string   // storm.principal.tolocal: how a principal maps to a local user
	SupervisorWorkerEnv []string // supervisor.worker.env: variables of the supervisor's environment passed to workers

	NimbusMaxUploads        int           // nimbus.max.concurrent.uploads: submissions receiving code at once
	NimbusUploadIdleTimeout time.Duration // nimbus.upload.idle.timeout.secs: silence that ends a submission's upload
	NimbusMaxStreams        int           // nimbus.grpc.max.concurrent.streams: per connection
	NimbusMaxMessageBytes   int           // nimbus.grpc.max_buffer_size: largest gRPC message received
	UIMaxConnections        int           // ui.max.connections
	NimbusMaxWatches        int           // nimbus.grpc.max.watch.streams, per caller

	// Sources says where Load found each key's value, by key. A key
	// missing from it (every key of a Config built in code) has its
	// default's source: Settings reports it as FromDefault.
	Sources map[string]Source
	// File is the YAML file Load read ("" for none): what a reload
	// reads again (Reread).
	File string
}

// Default returns a Config holding every default. nimbus.host defaults to
// this machine's hostname because peers must be able to dial it.
func Default() *Config {
	return &Config{
		ZKHosts:                  []string{DefaultZKServer},
		ZKPort:                   DefaultZKPort,
		ZKRoot:                   DefaultZKRoot,
		ZKSessionTimeout:         DefaultZKSessionTimeout,
		ZKConnectionTimeout:      DefaultZKConnectionTimeout,
		LocalDir:                 DefaultLocalDir,
		NimbusHost:               defaultNimbusHost(),
		NimbusGRPCPort:           DefaultNimbusGRPCPort,
		NimbusMetricsPort:        DefaultNimbusMetricsPort,
		NimbusSeeds:              []string{DefaultNimbusSeed},
		UIPort:                   DefaultUIPort,
		NimbusHealthPort:         PortDisabled,
		UIActionsEnabled:         true,
		NimbusDrainTimeout:       DefaultNimbusDrainTimeout,
		NimbusMaxArtifactBytes:   DefaultNimbusMaxArtifactBytes,
		CodeDistributorClass:     DefaultCodeDistributorClass,
		MinReplicationCount:      DefaultMinReplicationCount,
		MaxReplicationWaitSecs:   DefaultMaxReplicationWaitSecs,
		CodeLostGraceSecs:        DefaultCodeLostGraceSecs,
		SnapshotInterval:         DefaultSnapshotInterval,
		SnapshotRetain:           DefaultSnapshotRetain,
		TopologyMessageTimeout:   DefaultTopologyMessageTimeout,
		CodeSyncFreq:             DefaultCodeSyncFreq,
		MonitorFreq:              DefaultMonitorFreq,
		SupervisorTimeout:        DefaultSupervisorTimeout,
		SupervisorSlotsPorts:     []int{6700, 6701, 6702, 6703},
		SupervisorHeartbeat:      DefaultSupervisorHeartbeat,
		LocalHostname:            defaultNimbusHost(),
		WorkerShutdownSleep:      DefaultWorkerShutdownSleep,
		SupervisorMetricsPort:    DefaultSupervisorMetricsPort,
		SupervisorGRPCPort:       DefaultSupervisorGRPCPort,
		LogviewerPort:            DefaultLogviewerPort,
		LogviewerMaxPerWorkerMB:  DefaultLogviewerMaxPerWorkerMB,
		LogviewerMaxSumMB:        DefaultLogviewerMaxSumMB,
		LogviewerCleanupInterval: DefaultLogviewerCleanupInterval,
		LogsUsers:                []string{},
		HDFSStormDir:             DefaultHDFSStormDir,
		BlobstoreReplication:     DefaultBlobstoreReplication,
		BlobstoreDir:             DefaultBlobstoreDir,
		BlobMaxBytes:             DefaultBlobMaxBytes,
		LocalizerCacheTargetMB:   DefaultLocalizerCacheTargetMB,
		HDFSNamenodeAddresses:    []string{},
		BittorrentPort:           DefaultBittorrentPort,
		BittorrentSeedPeers:      DefaultBittorrentSeedPeers,
		LogLevel:                 DefaultLogLevel,
		LogFormat:                DefaultLogFormat,
		TLSPrincipal:             DefaultTLSPrincipal,
		NimbusAdmins:             []string{},
		NimbusUsers:              []string{},
		NimbusSupervisorUsers:    []string{},
		NimbusDaemonUsers:        []string{},
		ZKMaxBuffer:              DefaultZKMaxBuffer,
		SupervisorWorkerEnv:      []string{},
		NimbusMaxUploads:         DefaultNimbusMaxUploads,
		NimbusUploadIdleTimeout:  DefaultNimbusUploadIdleTimout,
		NimbusMaxStreams:         DefaultNimbusMaxStreams,
		NimbusMaxMessageBytes:    DefaultNimbusMaxMessageBytes,
		UIMaxConnections:         DefaultUIMaxConnections,
		NimbusMaxWatches:         DefaultNimbusMaxWatches,

		// Storm's default is false: TLS that accepts any name stops no one
		// in the middle.
		ZKSSLHostnameVerification: true,
	}
}

func defaultNimbusHost() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		return DefaultNimbusHost
	}
	return h
}

// field ties a key to its Config field, so defaults, loading and flags all
// work from one list. unit is what a bare integer means for a duration field.
type field struct {
	key   string
	unit  time.Duration
	usage string
	ptr   func(c *Config) any
}

var fields = []field{
	{KeyZKServers, 0, "ZooKeeper servers, host or host:port, comma-separated", func(c *Config) any { return &c.ZKHosts }},
	{KeyZKPort, 0, "ZooKeeper port for servers given without one", func(c *Config) any { return &c.ZKPort }},
	{KeyZKRoot, 0, "ZooKeeper path under which all state lives", func(c *Config) any { return &c.ZKRoot }},
	{KeyZKSessionTimeout, time.Millisecond, "ZooKeeper session timeout (ms or a duration like 20s)", func(c *Config) any { return &c.ZKSessionTimeout }},
	{KeyZKConnectionTimeout, time.Millisecond, "ZooKeeper connection timeout (ms or a duration)", func(c *Config) any { return &c.ZKConnectionTimeout }},
	{KeyLocalDir, 0, "local directory for state and artifacts", func(c *Config) any { return &c.LocalDir }},
	{KeyNimbusHost, 0, "host name peers and clients use to reach this nimbus", func(c *Config) any { return &c.NimbusHost }},
	{KeyNimbusGRPCPort, 0, "gRPC port (0 picks a free port)", func(c *Config) any { return &c.NimbusGRPCPort }},
	{KeyNimbusMetricsPort, 0, "metrics HTTP port (0 picks a free port, -1 disables)", func(c *Config) any { return &c.NimbusMetricsPort }},
	{KeyNimbusSeeds, 0, "nimbus addresses, host or host:port, comma-separated", func(c *Config) any { return &c.NimbusSeeds }},
	{KeyUIPort, 0, "REST API and web UI port (0 picks a free port, -1 disables)", func(c *Config) any { return &c.UIPort }},
	{KeyNimbusHealthPort, 0, "plaintext port serving only the gRPC health service, for probes that cannot speak TLS (0 picks a free port, -1 disables)", func(c *Config) any { return &c.NimbusHealthPort }},
	{KeyUIHost, 0, "address the REST API and web UI bind (empty: as the gRPC port)", func(c *Config) any { return &c.UIHost }},
	{KeyUIActionsEnabled, 0, "allow the REST API's actions (activate, deactivate, rebalance, kill)", func(c *Config) any { return &c.UIActionsEnabled }},
	{KeyNimbusDrainTimeout, time.Second, "how long a stopping nimbus waits for in-flight RPCs (secs or a duration)", func(c *Config) any { return &c.NimbusDrainTimeout }},
	{KeyNimbusMaxArtifactBytes, 0, "largest topology artifact accepted, in bytes", func(c *Config) any { return &c.NimbusMaxArtifactBytes }},
	{KeyCodeDistributorClass, 0, "code distributor: localfs (the default), hdfs or bittorrent", func(c *Config) any { return &c.CodeDistributorClass }},
	{KeyMinReplicationCount, 0, "nimbuses that must hold a topology's code before it is active", func(c *Config) any { return &c.MinReplicationCount }},
	{KeyMaxReplicationWait, 0, "seconds to wait for min replication (-1 = forever)", func(c *Config) any { return &c.MaxReplicationWaitSecs }},
	{KeyCodeLostGrace, 0, "seconds a topology's code may be held by no nimbus and no supervisor before it is marked LOST (-1 = never)", func(c *Config) any { return &c.CodeLostGraceSecs }},
	{KeySnapshotInterval, time.Second, "how often the leader saves a snapshot of the cluster into storm.local.dir, if it changed (secs or a duration; 0 = never)", func(c *Config) any { return &c.SnapshotInterval }},
	{KeySnapshotRetain, 0, "how many of its snapshots the leader keeps", func(c *Config) any { return &c.SnapshotRetain }},
	{KeyTopologyMessageTimeout, time.Second, "default topology message timeout (secs or a duration)", func(c *Config) any { return &c.TopologyMessageTimeout }},
	{KeyCodeSyncFreq, time.Second, "how often a non-leader syncs missing code (secs or a duration)", func(c *Config) any { return &c.CodeSyncFreq }},
	{KeyMonitorFreq, time.Second, "how often the leader checks assignments (secs or a duration)", func(c *Config) any { return &c.MonitorFreq }},
	{KeySupervisorTimeout, time.Second, "silence after which a supervisor is dead (secs or a duration)", func(c *Config) any { return &c.SupervisorTimeout }},
	{KeySupervisorSlotsPorts, 0, "worker slot ports, comma-separated", func(c *Config) any { return &c.SupervisorSlotsPorts }},
	{KeySupervisorHeartbeat, time.Second, "supervisor heartbeat interval (secs or a duration)", func(c *Config) any { return &c.SupervisorHeartbeat }},
	{KeyLocalHostname, 0, "host name a supervisor advertises", func(c *Config) any { return &c.LocalHostname }},
	{KeyWorkerShutdownSleep, time.Second, "grace between SIGTERM and SIGKILL of a worker (secs or a duration)", func(c *Config) any { return &c.WorkerShutdownSleep }},
	{KeySupervisorMetricsPort, 0, "supervisor metrics HTTP port (0 picks a free port, -1 disables)", func(c *Config) any { return &c.SupervisorMetricsPort }},
	{KeySupervisorGRPCPort, 0, "port serving this supervisor's code to nimbuses that lost theirs (0 picks a free port, -1 disables)", func(c *Config) any { return &c.SupervisorGRPCPort }},
	{KeyLogviewerPort, 0, "port serving the workers' logs, HTTPS with nimbus.grpc.tls.enable (0 picks a free port, -1 disables)", func(c *Config) any { return &c.LogviewerPort }},
	{KeyLogviewerMaxPerWorkerMB, 0, "MiB of log files one worker keeps (worker.log and its rotated files)", func(c *Config) any { return &c.LogviewerMaxPerWorkerMB }},
	{KeyLogviewerMaxSumMB, 0, "MiB of log files all workers of a supervisor keep; the oldest rotated files go first", func(c *Config) any { return &c.LogviewerMaxSumMB }},
	{KeyLogviewerCleanupInterval, time.Second, "how often a supervisor enforces logviewer.max.sum.worker.logs.size.mb (secs or a duration)", func(c *Config) any { return &c.LogviewerCleanupInterval }},
	{KeyLogsUsers, 0, "principals that may read every topology's worker logs (besides nimbus.admins)", func(c *Config) any { return &c.LogsUsers }},
	{KeyHDFSStormDir, 0, "HDFS directory for topology code", func(c *Config) any { return &c.HDFSStormDir }},
	{KeyBlobstoreReplication, 0, "nimbuses that must hold a blob before create or update is answered, unless the blob sets its own", func(c *Config) any { return &c.BlobstoreReplication }},
	{KeyBlobstoreDir, 0, "HDFS directory for blobs (with the hdfs distributor)", func(c *Config) any { return &c.BlobstoreDir }},
	{KeyBlobMaxBytes, 0, "largest blob accepted, in bytes", func(c *Config) any { return &c.BlobMaxBytes }},
	{KeyLocalizerCacheTargetMB, 0, "MiB of blobs no live topology uses that a supervisor keeps, least recently used first out", func(c *Config) any { return &c.LocalizerCacheTargetMB }},
	{KeyHDFSNamenodeAddresses, 0, "HDFS namenodes, host or host:port, comma-separated", func(c *Config) any { return &c.HDFSNamenodeAddresses }},
	{KeyHDFSUser, 0, "HDFS user name", func(c *Config) any { return &c.HDFSUser }},
	{KeyHDFSKerberosPrincipal, 0, "reserved: Kerberos is not yet supported", func(c *Config) any { return &c.HDFSKerberosPrincipal }},
	{KeyHDFSKerberosKeytab, 0, "reserved: Kerberos is not yet supported", func(c *Config) any { return &c.HDFSKerberosKeytab }},
	{KeyBittorrentPort, 0, "BitTorrent listen port (0 picks a free port)", func(c *Config) any { return &c.BittorrentPort }},
	{KeyBittorrentTrackerURL, 0, "BitTorrent tracker URL (http, https or udp); empty = no tracker", func(c *Config) any { return &c.BittorrentTrackerURL }},
	{KeyBittorrentMaxUpload, 0, "BitTorrent upload limit in KiB/s (0 = unlimited)", func(c *Config) any { return &c.BittorrentMaxUpload }},
	{KeyBittorrentMaxDownload, 0, "BitTorrent download limit in KiB/s (0 = unlimited)", func(c *Config) any { return &c.BittorrentMaxDownload }},
	{KeyBittorrentSeedPeers, 0, "downloaders a BitTorrent seed serves at once, per topology", func(c *Config) any { return &c.BittorrentSeedPeers }},
	{KeyLogLevel, 0, "log level: debug, info, warn or error", func(c *Config) any { return &c.LogLevel }},
	{KeyLogFormat, 0, "log format: text or json", func(c *Config) any { return &c.LogFormat }},
	{KeyTLSEnable, 0, "TLS on every gRPC listener and client", func(c *Config) any { return &c.TLSEnable }},
	{KeyTLSCert, 0, "this process's TLS certificate (PEM)", func(c *Config) any { return &c.TLSCert }},
	{KeyTLSKey, 0, "this process's TLS private key (PEM)", func(c *Config) any { return &c.TLSKey }},
	{KeyTLSTruststore, 0, "CA certificates that verify peers (PEM)", func(c *Config) any { return &c.TLSTruststore }},
	{KeyTLSClientAuthRequired, 0, "callers must present a certificate: authentication and authorization on", func(c *Config) any { return &c.TLSClientAuthRequired }},
	{KeyTLSPrincipal, 0, "what names a caller: cn, san.email, san.dns or san.uri of its certificate", func(c *Config) any { return &c.TLSPrincipal }},
	{KeyNimbusAdmins, 0, "principals that may do everything", func(c *Config) any { return &c.NimbusAdmins }},
	{KeyNimbusUsers, 0, "principals that may submit (empty = any authenticated principal)", func(c *Config) any { return &c.NimbusUsers }},
	{KeyNimbusSupervisorUsers, 0, "principals of the supervisors (may fetch code)", func(c *Config) any { return &c.NimbusSupervisorUsers }},
	{KeyNimbusDaemonUsers, 0, "principals of the nimbuses (may fetch code from each other)", func(c *Config) any { return &c.NimbusDaemonUsers }},
	{KeyMetricsPprof, 0, "serve pprof on the metrics port", func(c *Config) any { return &c.MetricsPprof }},
	{KeyZKAuthScheme, 0, "ZooKeeper authentication: empty or digest", func(c *Config) any { return &c.ZKAuthScheme }},
	{KeyZKAuthPayload, 0, "ZooKeeper digest credentials, user:password (a secret: prefer the file or environment)", func(c *Config) any { return &c.ZKAuthPayload }},
	{KeyZKSuperACL, 0, "an extra ZooKeeper identity given every permission, scheme:id", func(c *Config) any { return &c.ZKSuperACL }},
	{KeyZKMaxBuffer, 0, "the largest node ZooKeeper accepts, in bytes (its jute.maxbuffer)", func(c *Config) any { return &c.ZKMaxBuffer }},
	{KeyZKSSLEnable, 0, "reach ZooKeeper over TLS only (its secureClientPort)", func(c *Config) any { return &c.ZKSSLEnable }},
	{KeyZKSSLKeystore, 0, "this process's certificate chain and private key for ZooKeeper, one PEM file (needed when ZooKeeper's ssl.clientAuth asks)", func(c *Config) any { return &c.ZKSSLKeystore }},
	{KeyZKSSLTruststore, 0, "CA certificates that verify ZooKeeper's certificate (PEM)", func(c *Config) any { return &c.ZKSSLTruststore }},
	{KeyZKSSLHostnameVerification, 0, "ZooKeeper's certificate must name the host in storm.zookeeper.servers", func(c *Config) any { return &c.ZKSSLHostnameVerification }},
	{KeyRunWorkerAsUser, 0, "run each worker as its topology owner's local user", func(c *Config) any { return &c.RunWorkerAsUser }},
	{KeyPrincipalToLocal, 0, "how a principal maps to a local user: default (as is) or kerberos (name before / and @)", func(c *Config) any { return &c.PrincipalToLocal }},
	{KeySupervisorWorkerEnv, 0, "variables of the supervisor's environment passed to workers, comma-separated", func(c *Config) any { return &c.SupervisorWorkerEnv }},
	{KeyNimbusMaxUploads, 0, "submissions receiving code at once; more answer RESOURCE_EXHAUSTED", func(c *Config) any { return &c.NimbusMaxUploads }},
	{KeyNimbusUploadIdleTimeout, time.Second, "silence that ends a submission's upload (secs or a duration)", func(c *Config) any { return &c.NimbusUploadIdleTimeout }},
	{KeyNimbusMaxStreams, 0, "concurrent gRPC streams per connection", func(c *Config) any { return &c.NimbusMaxStreams }},
	{KeyNimbusMaxMessageBytes, 0, "largest gRPC message a nimbus receives, in bytes", func(c *Config) any { return &c.NimbusMaxMessageBytes }},
	{KeyUIMaxConnections, 0, "connections the REST API and web UI serve at once; more wait to be accepted", func(c *Config) any { return &c.UIMaxConnections }},
	{KeyNimbusMaxWatches, 0, "health Watch streams one caller (principal, or address without authentication) may hold open", func(c *Config) any { return &c.NimbusMaxWatches }},
}

// NimbusFlagKeys are the keys that bin/nimbus also takes as flags. Secrets
// (storm.zookeeper.auth.payload) are not among them: a command line is
// visible to every user of the machine.
func NimbusFlagKeys() []string {
	return []string{
		KeyZKServers, KeyZKPort, KeyZKRoot, KeyZKSessionTimeout, KeyZKConnectionTimeout, KeyLocalDir,
		KeyNimbusHost, KeyNimbusGRPCPort, KeyNimbusMetricsPort, KeyUIPort, KeyUIHost, KeyUIActionsEnabled, KeyNimbusHealthPort, KeyCodeDistributorClass, KeyLogLevel, KeyLogFormat,
		KeyMinReplicationCount, KeyMaxReplicationWait, KeyCodeSyncFreq, KeyCodeLostGrace, KeyNimbusMaxArtifactBytes, KeyTopologyMessageTimeout,
		KeySnapshotInterval, KeySnapshotRetain, KeyMonitorFreq, KeySupervisorTimeout, KeyBittorrentPort, KeyBittorrentTrackerURL,
		KeyBittorrentMaxUpload, KeyBittorrentMaxDownload, KeyBittorrentSeedPeers,
		KeyTLSEnable, KeyTLSCert, KeyTLSKey, KeyTLSTruststore, KeyTLSClientAuthRequired, KeyTLSPrincipal,
		KeyNimbusAdmins, KeyNimbusUsers, KeyNimbusSupervisorUsers, KeyNimbusDaemonUsers, KeyMetricsPprof,
		KeyZKAuthScheme, KeyZKSuperACL, KeyZKMaxBuffer,
		KeyZKSSLEnable, KeyZKSSLKeystore, KeyZKSSLTruststore, KeyZKSSLHostnameVerification,
		KeyNimbusMaxUploads, KeyNimbusUploadIdleTimeout, KeyNimbusMaxStreams, KeyNimbusMaxMessageBytes,
		KeyUIMaxConnections, KeyNimbusMaxWatches,
		KeyBlobstoreReplication, KeyBlobMaxBytes, KeyBlobstoreDir,
	}
}

// SupervisorFlagKeys are the keys that bin/supervisor also takes as flags.
func SupervisorFlagKeys() []string {
	return []string{
		KeyZKServers, KeyZKPort, KeyZKRoot, KeyZKSessionTimeout, KeyZKConnectionTimeout, KeyLocalDir,
		KeyLocalHostname, KeySupervisorSlotsPorts, KeySupervisorHeartbeat,
		KeyWorkerShutdownSleep, KeyCodeDistributorClass, KeyLogLevel, KeyLogFormat,
		KeyBittorrentPort, KeyBittorrentTrackerURL,
		KeyBittorrentMaxUpload, KeyBittorrentMaxDownload, KeyBittorrentSeedPeers,
		KeySupervisorMetricsPort, KeySupervisorGRPCPort,
		KeyLogviewerPort, KeyLogviewerMaxPerWorkerMB, KeyLogviewerMaxSumMB, KeyLogviewerCleanupInterval, KeyLogsUsers,
		KeyLocalizerCacheTargetMB, KeyBlobstoreDir,
		KeyTLSEnable, KeyTLSCert, KeyTLSKey, KeyTLSTruststore, KeyMetricsPprof,
		// Who may recover code from its code port: the nimbuses' rules.
		KeyTLSClientAuthRequired, KeyTLSPrincipal, KeyNimbusAdmins, KeyNimbusDaemonUsers,
		KeyZKAuthScheme, KeyZKSuperACL, KeyRunWorkerAsUser, KeyPrincipalToLocal, KeySupervisorWorkerEnv,
		KeyZKSSLEnable, KeyZKSSLKeystore, KeyZKSSLTruststore, KeyZKSSLHostnameVerification,
	}
}

// ClientFlagKeys are the keys that stormctl also takes as flags: how to
// reach and trust the nimbuses, and its own certificate.
func ClientFlagKeys() []string {
	return []string{KeyNimbusSeeds, KeyTLSEnable, KeyTLSCert, KeyTLSKey, KeyTLSTruststore}
}

// Keys returns every key this package knows, in a stable order.
func Keys() []string {
	keys := make([]string, len(fields))
	for i, f := range fields {
		keys[i] = f.key
	}
	return keys
}

// lookupField finds a key's field, ignoring case: YAML keys reach us
// lowercased (storm.zookeeper.superACL as storm.zookeeper.superacl).
func lookupField(key string) (field, bool) {
	for _, f := range fields {
		if strings.EqualFold(f.key, key) {
			return f, true
		}
	}
	return field{}, false
}

// ZKServers returns storm.zookeeper.servers as host:port, giving hosts
// without a port storm.zookeeper.port. Meant for a validated Config; an entry
// it cannot parse is returned unchanged.
func (c *Config) ZKServers() []string {
	return withPorts(c.ZKHosts, c.ZKPort)
}

// SeedAddrs returns nimbus.seeds as host:port, giving hosts without a port
// nimbus.grpc.port.
func (c *Config) SeedAddrs() []string {
	return withPorts(c.NimbusSeeds, c.NimbusGRPCPort)
}

// NimbusAddr returns the host:port this nimbus advertises. With
// nimbus.grpc.port 0 the caller must substitute the port it actually bound.
func (c *Config) NimbusAddr() string {
	return net.JoinHostPort(c.NimbusHost, strconv.Itoa(c.NimbusGRPCPort))
}

// MaxReplicationWait returns topology.max.replication.wait.time.sec as a
// duration, or forever=true when it is -1.
func (c *Config) MaxReplicationWait() (wait time.Duration, forever bool) {
	if c.MaxReplicationWaitSecs == WaitForever {
		return 0, true
	}
	return time.Duration(c.MaxReplicationWaitSecs) * time.Second, false
}

// ReplicationLogWait is how long code may be missing from the standbys
// before the leader and codesync warn: topology.max.replication.wait.time.sec,
// the time a submission gives replication. Waiting forever (-1) would
// silence them for good, so that case takes the default wait.
func (c *Config) ReplicationLogWait() time.Duration {
	if wait, forever := c.MaxReplicationWait(); !forever {
		return wait
	}
	return DefaultMaxReplicationWaitSecs * time.Second
}

// CodeLostGrace returns nimbus.code.lost.grace.secs as a duration, or
// never=true when it is -1.
func (c *Config) CodeLostGrace() (grace time.Duration, never bool) {
	if c.CodeLostGraceSecs == WaitForever {
		return 0, true
	}
	return time.Duration(c.CodeLostGraceSecs) * time.Second, false
}

func withPorts(entries []string, defaultPort int) []string {
	out := make([]string, len(entries))
	for i, e := range entries {
		host, port, err := splitHostPort(e)
		switch {
		case err != nil:
			out[i] = e
		case port == 0:
			out[i] = net.JoinHostPort(host, strconv.Itoa(defaultPort))
		default:
			out[i] = net.JoinHostPort(host, strconv.Itoa(port))
		}
	}
	return out
}
