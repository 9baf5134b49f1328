// The whole public API of normnet in one include, as <torch/torch.h> is for libtorch:
//   #include <normnet/normnet.hpp>
#pragma once

#include "normnet/arg.hpp"
#include "normnet/autograd.hpp"
#include "normnet/checkpoint.hpp"
#include "normnet/data.hpp"
#include "normnet/dist.hpp"
#include "normnet/error.hpp"
#include "normnet/export.hpp"
#include "normnet/function.hpp"
#include "normnet/gradcheck.hpp"
#include "normnet/idx.hpp"
#include "normnet/layers.hpp"
#include "normnet/models.hpp"
#include "normnet/module.hpp"
#include "normnet/onnx.hpp"
#include "normnet/ops.hpp"
#include "normnet/optim.hpp"
#include "normnet/tensor.hpp"
#include "normnet/text.hpp"
#include "normnet/threads.hpp"
