package ocistack

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// DockerConfigKey is the key of a kubernetes.io/dockerconfigjson Secret holding the config.
const DockerConfigKey = ".dockerconfigjson"

// maxDockerConfigBytes bounds the docker config read from a Secret.
const maxDockerConfigBytes = 64 << 10

// ErrNoCredentials is returned (wrapped) by DockerConfigCredentials when the config has no
// entry for the registry.
var ErrNoCredentials = errors.New("no credentials for the registry")

// DockerConfigCredentials returns the username and password a docker config (the
// `.dockerconfigjson` of a kubernetes.io/dockerconfigjson Secret, as `kubectl create secret
// docker-registry` writes it) holds for host (<name>[:<port>]): the entry of `auths` whose key
// is host, with or without an https:// or http:// scheme and a path, with `username` and
// `password`, or `auth` (base64 of "username:password"). The error never carries a credential.
func DockerConfigCredentials(config []byte, host string) (username, password string, err error) {
	if len(config) > maxDockerConfigBytes {
		return "", "", fmt.Errorf("the docker config is %d bytes, more than the %d allowed", len(config), maxDockerConfigBytes)
	}
	var cfg struct {
		Auths map[string]struct {
			Username string `json:"username"`
			Password string `json:"password"`
			Auth     string `json:"auth"`
		} `json:"auths"`
	}
	if err := json.Unmarshal(config, &cfg); err != nil {
		return "", "", errors.New("the docker config is not valid JSON of the form {\"auths\": {\"<registry>\": {...}}}")
	}
	for key, a := range cfg.Auths {
		if registryOf(key) != host {
			continue
		}
		if a.Auth != "" {
			raw, err := base64.StdEncoding.DecodeString(a.Auth)
			if err != nil {
				return "", "", fmt.Errorf("the auth of registry %s in the docker config is not base64", host)
			}
			u, p, ok := strings.Cut(string(raw), ":")
			if !ok {
				return "", "", fmt.Errorf("the auth of registry %s in the docker config is not base64 of username:password", host)
			}
			return u, p, nil
		}
		if a.Username == "" && a.Password == "" {
			return "", "", fmt.Errorf("the entry of registry %s in the docker config has neither auth nor username and password", host)
		}
		return a.Username, a.Password, nil
	}
	return "", "", fmt.Errorf("%w %s in the docker config's auths", ErrNoCredentials, host)
}

// registryOf is the host of a docker config's auths key: "https://host:5000/v1/" -> "host:5000".
func registryOf(key string) string {
	key = strings.TrimPrefix(strings.TrimPrefix(key, "https://"), "http://")
	host, _, _ := strings.Cut(key, "/")
	return host
}

// Host is the registry host of an oci:// repository URL (<name>[:<port>]).
func Host(url string) (string, error) {
	ref, err := Reference(url)
	if err != nil {
		return "", err
	}
	host, _, _ := strings.Cut(ref, "/")
	return host, nil
}
