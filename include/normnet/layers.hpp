// The layer zoo in one include, by family as in torch.nn: linear, activation, normalisation,
// convolution, pooling, padding, upsampling, dropout, loss and container modules, weight
// initialisation, and the libtorch-style holders nn::Linear, ... (include/normnet/nn/).
#pragma once

#include "normnet/nn/activation.hpp"
#include "normnet/nn/attention.hpp"
#include "normnet/nn/container.hpp"
#include "normnet/nn/conv.hpp"
#include "normnet/nn/dropout.hpp"
#include "normnet/nn/embedding.hpp"
#include "normnet/nn/holders.hpp"
#include "normnet/nn/init.hpp"
#include "normnet/nn/linear.hpp"
#include "normnet/nn/loss.hpp"
#include "normnet/nn/norm.hpp"
#include "normnet/nn/norm_choice.hpp"
#include "normnet/nn/padding.hpp"
#include "normnet/nn/pooling.hpp"
#include "normnet/nn/rnn.hpp"
#include "normnet/nn/transformer.hpp"
#include "normnet/nn/upsampling.hpp"
