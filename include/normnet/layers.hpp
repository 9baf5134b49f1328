// The layer zoo in one include, by family as in torch.nn: linear, activation, normalisation,
// convolution, pooling and container modules (include/normnet/nn/).
#pragma once

#include "normnet/nn/activation.hpp"
#include "normnet/nn/container.hpp"
#include "normnet/nn/conv.hpp"
#include "normnet/nn/linear.hpp"
#include "normnet/nn/norm.hpp"
#include "normnet/nn/pooling.hpp"
