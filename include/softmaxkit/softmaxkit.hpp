// softmaxkit: everything public, in one include.
#pragma once

#include "softmaxkit/attention.hpp"
#include "softmaxkit/build_config.hpp"
#include "softmaxkit/core/compare.hpp"
#include "softmaxkit/core/dtype.hpp"
#include "softmaxkit/core/error.hpp"
#include "softmaxkit/core/matrix.hpp"
#include "softmaxkit/core/online_state.hpp"
#include "softmaxkit/core/stream.hpp"
#include "softmaxkit/core/tensor.hpp"
#include "softmaxkit/cpu/cross_entropy.hpp"
#include "softmaxkit/cpu/softmax.hpp"
#include "softmaxkit/cross_entropy.hpp"
#include "softmaxkit/device.hpp"
#include "softmaxkit/matmul.hpp"
#include "softmaxkit/softmax.hpp"
