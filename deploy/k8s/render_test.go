package k8s

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/yaml"
)

// manifests is one rendered kustomization, decoded strictly: a field the
// API types do not know fails the decode.
type manifests struct {
	statefulSets map[string]*appsv1.StatefulSet
	daemonSets   map[string]*appsv1.DaemonSet
	services     map[string]*corev1.Service
	configMaps   map[string]*corev1.ConfigMap
	budgets      map[string]*policyv1.PodDisruptionBudget
}

// render renders the kustomization in dir with `kubectl kustomize` or
// `kustomize build`; with neither installed, a kustomization of resources
// and configMapGenerators only (base/) is put together here, and an overlay
// is skipped.
func render(t *testing.T, dir string) []byte {
	t.Helper()
	for _, cmd := range [][]string{{"kubectl", "kustomize", dir}, {"kustomize", "build", dir}} {
		if _, err := exec.LookPath(cmd[0]); err != nil {
			continue
		}
		var stderr bytes.Buffer
		c := exec.Command(cmd[0], cmd[1:]...)
		c.Stderr = &stderr
		out, err := c.Output()
		if err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(cmd, " "), err, stderr.Bytes())
		}
		return out
	}
	return renderPlain(t, dir)
}

// renderPlain puts together a kustomization that lists resources and
// generates ConfigMaps from files, and nothing else.
func renderPlain(t *testing.T, dir string) []byte {
	t.Helper()
	var k struct {
		APIVersion, Kind string
		Labels           []any
		Resources        []string
		ConfigMapGen     []struct {
			Name  string
			Files []string
		} `json:"configMapGenerator"`
	}
	if err := yaml.UnmarshalStrict(read(t, filepath.Join(dir, "kustomization.yaml")), &k); err != nil {
		t.Skipf("neither kubectl nor kustomize is installed, and %s needs one: %v", dir, err)
	}
	var out bytes.Buffer
	for _, r := range k.Resources {
		fmt.Fprintf(&out, "---\n%s\n", read(t, filepath.Join(dir, r)))
	}
	for _, g := range k.ConfigMapGen {
		cm := corev1.ConfigMap{Data: map[string]string{}}
		cm.APIVersion, cm.Kind, cm.Name = "v1", "ConfigMap", g.Name
		for _, f := range g.Files {
			cm.Data[filepath.Base(f)] = string(read(t, filepath.Join(dir, f)))
		}
		data, err := yaml.Marshal(cm)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&out, "---\n%s\n", data)
	}
	return out.Bytes()
}

func read(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// decode decodes every document of rendered strictly into its API type.
func decode(t *testing.T, rendered []byte) *manifests {
	t.Helper()
	m := &manifests{statefulSets: map[string]*appsv1.StatefulSet{}, daemonSets: map[string]*appsv1.DaemonSet{},
		services: map[string]*corev1.Service{}, configMaps: map[string]*corev1.ConfigMap{}, budgets: map[string]*policyv1.PodDisruptionBudget{}}
	for i, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(rendered), -1) {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		var head struct{ Kind string }
		if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
			t.Fatalf("document %d: %v", i, err)
		}
		var err error
		switch head.Kind {
		case "StatefulSet":
			err = strictInto(doc, m.statefulSets)
		case "DaemonSet":
			err = strictInto(doc, m.daemonSets)
		case "Service":
			err = strictInto(doc, m.services)
		case "ConfigMap":
			err = strictInto(doc, m.configMaps)
		case "PodDisruptionBudget":
			err = strictInto(doc, m.budgets)
		default:
			t.Fatalf("document %d: kind %q is not one these tests check", i, head.Kind)
		}
		if err != nil {
			t.Fatalf("document %d (%s): %v", i, head.Kind, err)
		}
	}
	return m
}

// object is a Kubernetes object these tests decode.
type object interface {
	GetName() string
}

func strictInto[T any, P interface {
	*T
	object
}](doc string, into map[string]P) error {
	obj := P(new(T))
	if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
		return err
	}
	into[obj.GetName()] = obj
	return nil
}

// Strict decoding is strict: a misspelt field fails.
func TestStrictDecodeRefusesUnknownFields(t *testing.T) {
	doc := "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: x}\nspec: {minAvailabel: 2}\n"
	if err := strictInto(doc, map[string]*policyv1.PodDisruptionBudget{}); err == nil || !strings.Contains(err.Error(), "minAvailabel") {
		t.Fatalf("decoding a misspelt field: %v; want an error naming it", err)
	}
}
