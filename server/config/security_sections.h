#pragma once
// The config's security sections (docs/SECURITY.md, "Configuration"): `tls`, `auth`, `limits`,
// and the rule that a `listen` address off loopback needs both tls and auth unless
// `insecure: true` (docs/SECURITY.md, "Threat model").

#include <string>

#include "auth/access_policy.h"
#include "auth/tls_settings.h"
#include "config/yaml_walk.h"
#include "core/limits.h"

namespace ckpt {

MaybeYamlError ReadTlsSection(const YamlField& field, TlsSettings* tls);
MaybeYamlError ReadAuthSection(const YamlField& field, AuthSpec* auth);
MaybeYamlError ReadLimitsSection(const YamlField& field, Limits* limits);

// The refusal by default: "" when `listen` may serve as configured, else the reason naming the
// missing key(s).
std::string ExposureProblem(const std::string& listen, const TlsSettings& tls, const AuthSpec& auth,
                            bool insecure);

}  // namespace ckpt
