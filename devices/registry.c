/* registry: every device backend class of this folder (device.h). Adding a vendor: its file (or
 * folder), one line here, its tests (docs/architecture.md "How to add"). */
#include "device.h"

extern const struct vs_device_class vs_device_class_nvidia, vs_device_class_hygon;
extern const struct vs_device_class vs_device_class_enflame;
extern const struct vs_device_class vs_device_class_kunlun;
extern const struct vs_device_class vs_device_class_awsneuron;
extern const struct vs_device_class vs_device_class_amd;
extern const struct vs_device_class vs_device_class_biren;
extern const struct vs_device_class vs_device_class_vastai;
extern const struct vs_device_class vs_device_class_cambricon;
extern const struct vs_device_class vs_device_class_iluvatar;
extern const struct vs_device_class vs_device_class_mthreads;
extern const struct vs_device_class vs_device_class_metax;
extern const struct vs_device_class vs_device_class_ascend;

/* One class per line. */
/* clang-format off */
const struct vs_device_class *const vs_device_classes[] = {
    &vs_device_class_nvidia,
    &vs_device_class_hygon,
    &vs_device_class_enflame,
    &vs_device_class_kunlun,
    &vs_device_class_awsneuron,
    &vs_device_class_amd,
    &vs_device_class_biren,
    &vs_device_class_vastai,
    &vs_device_class_cambricon,
    &vs_device_class_iluvatar,
    &vs_device_class_mthreads,
    &vs_device_class_metax,
    &vs_device_class_ascend,
};
/* clang-format on */
const size_t vs_n_device_classes = sizeof(vs_device_classes) / sizeof(vs_device_classes[0]);
