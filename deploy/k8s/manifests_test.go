package k8s

import (
	"regexp"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"
)

// readyService is the value of nimbusv1.ReadyHealthService, read from its
// declaration (this module does not import the daemons').
func readyService(t *testing.T) string { return healthService(t, "ReadyHealthService") }

// liveService is the value of nimbusv1.LiveHealthService, read as
// readyService is.
func liveService(t *testing.T) string { return healthService(t, "LiveHealthService") }

// healthService reads the value of a health service constant from
// proto/nimbus/v1/protocol.go.
func healthService(t *testing.T, name string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^const ` + name + ` = "([^"]+)"`).FindSubmatch(read(t, "../../proto/nimbus/v1/protocol.go"))
	if m == nil {
		t.Fatalf("no %s constant in proto/nimbus/v1/protocol.go", name)
	}
	return string(m[1])
}

// The base and the example overlay render, decode strictly, and hold
// together: the nimbuses' probes ask the health services a nimbus serves,
// on the port it listens on; the budget keeps a majority; certificates come
// from Secrets as files that follow a rotation; the volume claimed holds
// storm.local.dir.
func TestManifests(t *testing.T) {
	ready := readyService(t)
	for _, dir := range []string{"base", "example"} {
		t.Run(dir, func(t *testing.T) {
			m := decode(t, render(t, dir))
			nimbus := m.statefulSets["nimbus"]
			if nimbus == nil {
				t.Fatal("no StatefulSet nimbus")
			}
			conf := stormConf(t, m)
			checkNimbusService(t, m, nimbus)
			checkProbes(t, nimbus, conf, ready, liveService(t))
			checkBudget(t, m, nimbus)
			checkVolumes(t, &nimbus.Spec.Template.Spec, "nimbus-tls", conf)
			if len(nimbus.Spec.VolumeClaimTemplates) != 1 || nimbus.Spec.VolumeClaimTemplates[0].Name != "local" {
				t.Errorf("volumeClaimTemplates %v: want one, local, for storm.local.dir", nimbus.Spec.VolumeClaimTemplates)
			}
			sup := m.daemonSets["supervisor"]
			if sup == nil {
				t.Fatal("no DaemonSet supervisor")
			}
			if c := sup.Spec.Template.Spec.Containers[0]; !slices.Equal(c.Command, []string{"/usr/bin/supervisor"}) {
				t.Errorf("the supervisor's command %v: want /usr/bin/supervisor", c.Command)
			}
			checkVolumes(t, &sup.Spec.Template.Spec, "supervisor-tls", conf)
		})
	}
}

// stormConf is the storm.yaml the ConfigMap holds, the one the pods mount.
func stormConf(t *testing.T, m *manifests) map[string]any {
	t.Helper()
	if len(m.configMaps) != 1 {
		t.Fatalf("%d ConfigMaps: want one, storm.yaml's", len(m.configMaps))
	}
	for _, cm := range m.configMaps {
		conf := map[string]any{}
		if err := yaml.Unmarshal([]byte(cm.Data["storm.yaml"]), &conf); err != nil {
			t.Fatalf("ConfigMap %s: storm.yaml: %v", cm.Name, err)
		}
		if conf["storm.zookeeper.servers"] == nil {
			t.Errorf("ConfigMap %s: storm.yaml names no ZooKeeper (storm.zookeeper.servers)", cm.Name)
		}
		return conf
	}
	return nil
}

// checkNimbusService: the StatefulSet's Service is headless and publishes
// nimbuses before they are ready (stable names for a nimbus catching up);
// the clients' Service selects the same pods.
func checkNimbusService(t *testing.T, m *manifests, nimbus *appsv1.StatefulSet) {
	t.Helper()
	if *nimbus.Spec.Replicas != 3 {
		t.Errorf("%d nimbuses: want 3", *nimbus.Spec.Replicas)
	}
	headless := m.services[nimbus.Spec.ServiceName]
	if headless == nil || headless.Spec.ClusterIP != corev1.ClusterIPNone || !headless.Spec.PublishNotReadyAddresses {
		t.Errorf("serviceName %q: want a headless Service publishing addresses not ready, got %+v", nimbus.Spec.ServiceName, headless)
	}
	clients := m.services["nimbus"]
	if clients == nil || clients.Spec.ClusterIP == corev1.ClusterIPNone {
		t.Fatal("no Service nimbus for clients and the UI")
	}
	for k, v := range clients.Spec.Selector {
		if nimbus.Spec.Template.Labels[k] != v {
			t.Errorf("Service nimbus selects %s=%s, which the nimbuses do not carry", k, v)
		}
	}
}

// checkProbes: startup and readiness ask the readiness service, liveness
// the liveness service, all on nimbus.health.port (plaintext: the kubelet's probes speak no
// TLS), which the nimbus container exposes.
func checkProbes(t *testing.T, nimbus *appsv1.StatefulSet, conf map[string]any, ready, live string) {
	t.Helper()
	port, ok := conf["nimbus.health.port"].(float64)
	if !ok || port <= 0 {
		t.Fatalf("storm.yaml: nimbus.health.port %v: the probes need it", conf["nimbus.health.port"])
	}
	c := nimbus.Spec.Template.Spec.Containers[0]
	exposed := false
	for _, p := range c.Ports {
		exposed = exposed || p.ContainerPort == int32(port)
	}
	if !exposed {
		t.Errorf("the nimbus container does not expose nimbus.health.port %d", int(port))
	}
	for _, p := range []struct {
		name    string
		probe   *corev1.Probe
		service string
	}{{"startup", c.StartupProbe, ready}, {"readiness", c.ReadinessProbe, ready}, {"liveness", c.LivenessProbe, live}} {
		if p.probe == nil || p.probe.GRPC == nil {
			t.Errorf("%s probe %+v: want a gRPC probe", p.name, p.probe)
			continue
		}
		if got := p.probe.GRPC.Service; got == nil || *got != p.service {
			t.Errorf("%s probe asks service %v: want %q", p.name, got, p.service)
		}
		if p.probe.GRPC.Port != int32(port) {
			t.Errorf("%s probe on port %d: nimbus.health.port is %d", p.name, p.probe.GRPC.Port, int(port))
		}
	}
}

// checkBudget: the PodDisruptionBudget keeps a majority of the nimbuses and
// still lets one go.
func checkBudget(t *testing.T, m *manifests, nimbus *appsv1.StatefulSet) {
	t.Helper()
	pdb := m.budgets["nimbus"]
	if pdb == nil || pdb.Spec.MinAvailable == nil || pdb.Spec.MinAvailable.Type != intstr.Int {
		t.Fatalf("PodDisruptionBudget nimbus %+v: want minAvailable as a number", pdb)
	}
	replicas, min := int(*nimbus.Spec.Replicas), pdb.Spec.MinAvailable.IntValue()
	if min <= replicas/2 || min >= replicas {
		t.Errorf("minAvailable %d of %d nimbuses: want a majority that lets one go", min, replicas)
	}
	for k, v := range pdb.Spec.Selector.MatchLabels {
		if nimbus.Spec.Template.Labels[k] != v {
			t.Errorf("the budget selects %s=%s, which the nimbuses do not carry", k, v)
		}
	}
}

// checkVolumes: a non-root pod mounting storm.yaml at /etc/storm, its
// certificates from the Secret secret as a directory (a subPath mount
// would never see a rotation), and storm.local.dir.
func checkVolumes(t *testing.T, pod *corev1.PodSpec, secret string, conf map[string]any) {
	t.Helper()
	if sc := pod.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser == 0 {
		t.Errorf("pod securityContext %+v: want a non-root numeric user", sc)
	}
	mounts := map[string]corev1.VolumeMount{}
	for _, vm := range pod.Containers[0].VolumeMounts {
		mounts[vm.Name] = vm
	}
	// The ConfigMap as a directory, which the kubelet updates (a subPath
	// mount would never change: no reload), and the daemon reading it.
	if cm := mounts["config"]; cm.MountPath != "/etc/storm/conf" || cm.SubPath != "" {
		t.Errorf("config mount %+v: want the ConfigMap's directory at /etc/storm/conf", cm)
	}
	if args := pod.Containers[0].Args; len(args) != 2 || args[0] != "--config" || args[1] != "/etc/storm/conf/storm.yaml" {
		t.Errorf("args %v: want --config /etc/storm/conf/storm.yaml", args)
	}
	if local := conf["storm.local.dir"]; mounts["local"].MountPath != local {
		t.Errorf("volume local mounted at %q, storm.local.dir is %v", mounts["local"].MountPath, local)
	}
	tls, ok := mounts["tls"]
	if !ok || tls.SubPath != "" {
		t.Errorf("tls mount %+v: want the Secret's directory", tls)
	}
	for _, v := range pod.Volumes {
		if v.Name == "tls" && (v.Secret == nil || v.Secret.SecretName != secret) {
			t.Errorf("volume tls %+v: want Secret %s", v.VolumeSource, secret)
		}
	}
}
