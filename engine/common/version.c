#include "uih/uih.h"

const char *uih_version(void) { return UIH_VERSION_STRING; }
