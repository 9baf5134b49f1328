// libtorch's spellings of the layer zoo, so that a libtorch program reads the same with torch::
// renamed normnet::: the holders normnet::nn::Linear, nn::Conv2d, ... (ModuleHolder<normnet::Linear>:
// shared handles, as torch::nn::Linear is), and the namespaces nn::functional and nn::utils
// (aliases of normnet, where the functions and clip_grad_norm_ live) and optim (optim.hpp).
// normnet::Linear itself stays the module, a plain value as before.
#pragma once

#include "normnet/module.hpp"
#include "normnet/nn/activation.hpp"
#include "normnet/nn/attention.hpp"
#include "normnet/nn/container.hpp"
#include "normnet/nn/conv.hpp"
#include "normnet/nn/dropout.hpp"
#include "normnet/nn/embedding.hpp"
#include "normnet/nn/linear.hpp"
#include "normnet/nn/loss.hpp"
#include "normnet/nn/norm.hpp"
#include "normnet/nn/pooling.hpp"
#include "normnet/nn/rnn.hpp"
#include "normnet/nn/transformer.hpp"
#include "normnet/ops.hpp"

namespace normnet::nn {

/// torch::nn::Module and friends, for `struct NetImpl : nn::Module`.
using Module = ::normnet::Module;
template <class M>
using Cloneable = ::normnet::Cloneable<M>;
using AnyModule = ::normnet::AnyModule;
template <class M>
using ModuleHolder = ::normnet::ModuleHolder<M>;

using ReLU = ModuleHolder<normnet::ReLU>;
using GELU = ModuleHolder<normnet::GELU>;
using Tanh = ModuleHolder<normnet::Tanh>;
using Sigmoid = ModuleHolder<normnet::Sigmoid>;
using SiLU = ModuleHolder<normnet::SiLU>;
using LeakyReLU = ModuleHolder<normnet::LeakyReLU>;
using ELU = ModuleHolder<normnet::ELU>;
using Softplus = ModuleHolder<normnet::Softplus>;
using Softmax = ModuleHolder<normnet::Softmax>;
using LogSoftmax = ModuleHolder<normnet::LogSoftmax>;
using MultiheadAttention = ModuleHolder<normnet::MultiheadAttention>;
using Sequential = ModuleHolder<normnet::Sequential>;
using ModuleList = ModuleHolder<normnet::ModuleList>;
using ModuleDict = ModuleHolder<normnet::ModuleDict>;
using Functional = ModuleHolder<normnet::Functional>;
using Conv2d = ModuleHolder<normnet::Conv2d>;
using Dropout = ModuleHolder<normnet::Dropout>;
using Embedding = ModuleHolder<normnet::Embedding>;
using Linear = ModuleHolder<normnet::Linear>;
using Identity = ModuleHolder<normnet::Identity>;
using Flatten = ModuleHolder<normnet::Flatten>;
using Unflatten = ModuleHolder<normnet::Unflatten>;
using NLLLoss = ModuleHolder<normnet::NLLLoss>;
using CrossEntropyLoss = ModuleHolder<normnet::CrossEntropyLoss>;
using BCELoss = ModuleHolder<normnet::BCELoss>;
using BCEWithLogitsLoss = ModuleHolder<normnet::BCEWithLogitsLoss>;
using L1Loss = ModuleHolder<normnet::L1Loss>;
using MSELoss = ModuleHolder<normnet::MSELoss>;
using SmoothL1Loss = ModuleHolder<normnet::SmoothL1Loss>;
using HuberLoss = ModuleHolder<normnet::HuberLoss>;
using LayerNorm = ModuleHolder<normnet::LayerNorm>;
using BatchNorm1d = ModuleHolder<normnet::BatchNorm1d>;
using BatchNorm2d = ModuleHolder<normnet::BatchNorm2d>;
using InstanceNorm2d = ModuleHolder<normnet::InstanceNorm2d>;
using GroupNorm = ModuleHolder<normnet::GroupNorm>;
using RMSNorm = ModuleHolder<normnet::RMSNorm>;
using SequenceBatchNorm = ModuleHolder<normnet::SequenceBatchNorm>;
using MaxPool2d = ModuleHolder<normnet::MaxPool2d>;
using AvgPool2d = ModuleHolder<normnet::AvgPool2d>;
using AdaptiveAvgPool2d = ModuleHolder<normnet::AdaptiveAvgPool2d>;
using LSTM = ModuleHolder<normnet::LSTM>;
using GRU = ModuleHolder<normnet::GRU>;
using LayerNormLSTM = ModuleHolder<normnet::LayerNormLSTM>;
using TransformerEncoderLayer = ModuleHolder<normnet::TransformerEncoderLayer>;
using TransformerEncoder = ModuleHolder<normnet::TransformerEncoder>;

// The options, under torch::nn's names.
using GELUOptions = ::normnet::GELUOptions;
using LeakyReLUOptions = ::normnet::LeakyReLUOptions;
using ELUOptions = ::normnet::ELUOptions;
using SoftplusOptions = ::normnet::SoftplusOptions;
using SoftmaxOptions = ::normnet::SoftmaxOptions;
using MultiheadAttentionOptions = ::normnet::MultiheadAttentionOptions;
using Conv2dOptions = ::normnet::Conv2dOptions;
using DropoutOptions = ::normnet::DropoutOptions;
using EmbeddingOptions = ::normnet::EmbeddingOptions;
using LinearOptions = ::normnet::LinearOptions;
using FlattenOptions = ::normnet::FlattenOptions;
using UnflattenOptions = ::normnet::UnflattenOptions;
using LayerNormOptions = ::normnet::LayerNormOptions;
using BatchNormOptions = ::normnet::BatchNormOptions;
using InstanceNormOptions = ::normnet::InstanceNormOptions;
using GroupNormOptions = ::normnet::GroupNormOptions;
using RMSNormOptions = ::normnet::RMSNormOptions;
using BatchNorm1dOptions = ::normnet::BatchNorm1dOptions;
using BatchNorm2dOptions = ::normnet::BatchNorm2dOptions;
using InstanceNorm2dOptions = ::normnet::InstanceNorm2dOptions;
using MaxPool2dOptions = ::normnet::MaxPool2dOptions;
using AvgPool2dOptions = ::normnet::AvgPool2dOptions;
using AdaptiveAvgPool2dOptions = ::normnet::AdaptiveAvgPool2dOptions;
using RNNOptions = ::normnet::RNNOptions;
using LayerNormLSTMOptions = ::normnet::LayerNormLSTMOptions;
using LSTMOptions = ::normnet::LSTMOptions;
using GRUOptions = ::normnet::GRUOptions;
using TransformerEncoderLayerOptions = ::normnet::TransformerEncoderLayerOptions;
using TransformerEncoderOptions = ::normnet::TransformerEncoderOptions;
using NLLLossOptions = ::normnet::NLLLossOptions;
using CrossEntropyLossOptions = ::normnet::CrossEntropyLossOptions;
using BCELossOptions = ::normnet::BCELossOptions;
using BCEWithLogitsLossOptions = ::normnet::BCEWithLogitsLossOptions;
using L1LossOptions = ::normnet::L1LossOptions;
using MSELossOptions = ::normnet::MSELossOptions;
using SmoothL1LossOptions = ::normnet::SmoothL1LossOptions;
using HuberLossOptions = ::normnet::HuberLossOptions;

/// torch::nn::functional: normnet's functions (relu, max_pool2d, cross_entropy, ...) under that name.
namespace functional = ::normnet;
/// torch::nn::utils: clip_grad_norm_, clip_grad_value_.
namespace utils = ::normnet;

}  // namespace normnet::nn
