package main

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v3"

	"github.com/zkconf/zkconf/cmd/internal/config"
)

type k8sObject struct {
	Kind     string `yaml:"kind"`
	Metadata struct {
		Name string `yaml:"name"`
	} `yaml:"metadata"`
	Data       map[string]string `yaml:"data"`
	StringData map[string]string `yaml:"stringData"`
	Spec       struct {
		Containers []k8sContainer `yaml:"containers"`
		Volumes    []struct {
			Name      string `yaml:"name"`
			ConfigMap *struct {
				Name string `yaml:"name"`
			} `yaml:"configMap"`
			EmptyDir any `yaml:"emptyDir"`
		} `yaml:"volumes"`
	} `yaml:"spec"`
}

type k8sContainer struct {
	Name    string   `yaml:"name"`
	Command []string `yaml:"command"`
	Args    []string `yaml:"args"`
	Env     []struct {
		Name      string `yaml:"name"`
		ValueFrom struct {
			SecretKeyRef struct {
				Name string `yaml:"name"`
				Key  string `yaml:"key"`
			} `yaml:"secretKeyRef"`
		} `yaml:"valueFrom"`
	} `yaml:"env"`
	ReadinessProbe struct {
		HTTPGet struct {
			Path string `yaml:"path"`
			Port int    `yaml:"port"`
		} `yaml:"httpGet"`
	} `yaml:"readinessProbe"`
	VolumeMounts []struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
		ReadOnly  bool   `yaml:"readOnly"`
	} `yaml:"volumeMounts"`
}

func loadK8s(t *testing.T, file string) []k8sObject {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var objs []k8sObject
	dec := yaml.NewDecoder(bytes.NewReader(b))
	for {
		var o k8sObject
		if err := dec.Decode(&o); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		objs = append(objs, o)
	}
	return objs
}

// TestKubernetesExamples checks the Pods of examples/kubernetes (here, not
// there, because it loads their configuration with confagent's own loader):
// every volume mount has its volume, the ConfigMap holding confagent.yaml
// exists and the configuration in it loads (its template beside it), the
// confagent container's --config is that file, every target and state_dir
// lie on a writable emptyDir the confagent container mounts (targets on one
// another container mounts too, in the sidecar), the readiness probe asks
// /readyz on http.listen's port, and ZKCONF_AUTH comes from a Secret of the
// file.
func TestKubernetesExamples(t *testing.T) {
	for _, file := range []string{"sidecar.yaml", "exec.yaml"} {
		t.Run(file, func(t *testing.T) {
			objs := loadK8s(t, filepath.Join("..", "..", "examples", "kubernetes", file))
			byKind := map[string]map[string]k8sObject{}
			for _, o := range objs {
				if byKind[o.Kind] == nil {
					byKind[o.Kind] = map[string]k8sObject{}
				}
				byKind[o.Kind][o.Metadata.Name] = o
			}
			if len(byKind["Pod"]) != 1 {
				t.Fatalf("want one Pod, got %d", len(byKind["Pod"]))
			}
			for _, pod := range byKind["Pod"] {
				checkK8sPod(t, pod, byKind)
			}
		})
	}
}

func checkK8sPod(t *testing.T, pod k8sObject, byKind map[string]map[string]k8sObject) {
	volumes := map[string]bool{}
	emptyDirs := map[string]bool{}
	for _, v := range pod.Spec.Volumes {
		volumes[v.Name] = true
		if v.EmptyDir != nil {
			emptyDirs[v.Name] = true
		}
		if v.ConfigMap != nil {
			if _, ok := byKind["ConfigMap"][v.ConfigMap.Name]; !ok {
				t.Errorf("volume %s: no ConfigMap %q in the file", v.Name, v.ConfigMap.Name)
			}
		}
	}
	var agent *k8sContainer
	for i, c := range pod.Spec.Containers {
		for _, m := range c.VolumeMounts {
			if !volumes[m.Name] {
				t.Errorf("container %s mounts %q, which is no volume", c.Name, m.Name)
			}
		}
		argv := append(append([]string{}, c.Command...), c.Args...)
		if c.Name == "confagent" || (len(argv) > 0 && path.Base(argv[0]) == "confagent") {
			agent = &pod.Spec.Containers[i]
		}
	}
	if agent == nil {
		t.Fatal("no confagent container")
	}
	argv := append(append([]string{}, agent.Command...), agent.Args...)
	cfgPath := ""
	for i, a := range argv {
		if a == "--config" && i+1 < len(argv) {
			cfgPath = argv[i+1]
		}
	}
	if cfgPath == "" {
		t.Fatalf("container %s: no --config in %q", agent.Name, argv)
	}
	// The ConfigMap mounted at --config's directory holds the file.
	var cm k8sObject
	for _, m := range agent.VolumeMounts {
		if m.MountPath == path.Dir(cfgPath) {
			for _, v := range pod.Spec.Volumes {
				if v.Name == m.Name && v.ConfigMap != nil {
					cm = byKind["ConfigMap"][v.ConfigMap.Name]
				}
			}
		}
	}
	if cm.Data[path.Base(cfgPath)] == "" {
		t.Fatalf("--config %s: no ConfigMap with key %s mounted at %s", cfgPath, path.Base(cfgPath), path.Dir(cfgPath))
	}
	// Load it as the container would, with every key of the ConfigMap
	// beside it (the template).
	dir := t.TempDir()
	for k, v := range cm.Data {
		if err := os.WriteFile(filepath.Join(dir, k), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := config.Load(filepath.Join(dir, path.Base(cfgPath)))
	if err != nil {
		t.Fatalf("the configuration in ConfigMap %s does not load: %v", cm.Metadata.Name, err)
	}
	onEmptyDir := func(c k8sContainer, p string) bool {
		for _, m := range c.VolumeMounts {
			if emptyDirs[m.Name] && !m.ReadOnly && (p == m.MountPath || strings.HasPrefix(p, m.MountPath+"/")) {
				return true
			}
		}
		return false
	}
	if !onEmptyDir(*agent, cfg.StateDir) {
		t.Errorf("state_dir %s is on no writable emptyDir of container %s", cfg.StateDir, agent.Name)
	}
	for _, tg := range cfg.Targets {
		if !onEmptyDir(*agent, tg.Dest) {
			t.Errorf("target %s: %s is on no writable emptyDir of container %s", tg.Name, tg.Dest, agent.Name)
		}
		if agent.Name != "confagent" {
			continue // exec: the application runs in the same container
		}
		shared := false
		for _, c := range pod.Spec.Containers {
			for _, m := range c.VolumeMounts {
				if c.Name != agent.Name && emptyDirs[m.Name] {
					for _, am := range agent.VolumeMounts {
						if am.Name == m.Name && strings.HasPrefix(tg.Dest, am.MountPath+"/") {
							shared = true
						}
					}
				}
			}
		}
		if !shared {
			t.Errorf("target %s: %s is on no volume another container mounts", tg.Name, tg.Dest)
		}
	}
	_, port, err := net.SplitHostPort(cfg.HTTP.Listen)
	if err != nil {
		t.Fatalf("http.listen %q: %v", cfg.HTTP.Listen, err)
	}
	if p := agent.ReadinessProbe.HTTPGet; p.Path != "/readyz" || port != strconv.Itoa(p.Port) {
		t.Errorf("readiness probe %s:%d, want /readyz on http.listen's port %s", p.Path, p.Port, port)
	}
	auth := false
	for _, e := range agent.Env {
		if e.Name == "ZKCONF_AUTH" {
			ref := e.ValueFrom.SecretKeyRef
			if s, ok := byKind["Secret"][ref.Name]; !ok || s.StringData[ref.Key] == "" {
				t.Errorf("ZKCONF_AUTH: no Secret %s with key %s in the file", ref.Name, ref.Key)
			}
			auth = true
		}
	}
	if !auth {
		t.Error("no ZKCONF_AUTH from a Secret")
	}
	if e := slices.Index(argv, "exec"); e >= 0 && slices.Index(argv[e:], "--") < 0 {
		t.Errorf("exec without \"--\" before the command: %q", argv)
	}
}
