package configs

import "strings"

// secretWords mark a key whose value must not be shown: a key is secret
// if one of its words (split at '.', '_' and '-', lower-cased) contains
// one of them, or ends with "key" (api.key, aws.accesskey, ssh_key).
var secretWords = []string{"password", "passwd", "secret", "token", "credential", "payload", "private", "jaas", "keystore", "truststore"}

// IsSecretKey reports whether a key's value is redacted when shown: a
// topology conf's key (GetTopologyConf) or a nimbus's (GetNimbusConfig,
// where it hides storm.zookeeper.auth.payload). The rule is by name only,
// and errs on the side of hiding: a topology's conf is free-form, and a
// value shown is a value leaked.
func IsSecretKey(key string) bool {
	for w := range strings.FieldsFuncSeq(strings.ToLower(key), func(r rune) bool { return r == '.' || r == '_' || r == '-' }) {
		if strings.HasSuffix(w, "key") {
			return true
		}
		for _, s := range secretWords {
			if strings.Contains(w, s) {
				return true
			}
		}
	}
	return false
}
