// The whole public API of normnet in one include.
#pragma once

#include "normnet/autograd.hpp"
#include "normnet/checkpoint.hpp"
#include "normnet/data.hpp"
#include "normnet/error.hpp"
#include "normnet/gradcheck.hpp"
#include "normnet/layers.hpp"
#include "normnet/module.hpp"
#include "normnet/ops.hpp"
#include "normnet/optim.hpp"
#include "normnet/tensor.hpp"
#include "normnet/threads.hpp"
