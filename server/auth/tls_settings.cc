#include "auth/tls_settings.h"

namespace ckpt {

const char* ClientAuthName(ClientAuth mode) {
  switch (mode) {
    case ClientAuth::kNone: return "none";
    case ClientAuth::kRequest: return "request";
    case ClientAuth::kRequire: return "require";
  }
  return "none";
}

}  // namespace ckpt
