/* registry: every device backend class of this folder (device.h). Adding a vendor: its file (or
 * folder), one line here, its tests (docs/architecture.md "How to add"). */
#include "device.h"

extern const struct vs_device_class vs_device_class_nvidia, vs_device_class_hygon;
extern const struct vs_device_class vs_device_class_ascend;

const struct vs_device_class *const vs_device_classes[] = {
    &vs_device_class_nvidia,
    &vs_device_class_hygon,
    &vs_device_class_ascend,
};
const size_t vs_n_device_classes = sizeof(vs_device_classes) / sizeof(vs_device_classes[0]);
