// The model classes of normnet::models in one include (as torchvision.models): MLP, CNN,
// VisionTransformer, RowLSTM and CharTransformer (include/normnet/models/).
#pragma once

#include "normnet/models/char_transformer.hpp"
#include "normnet/models/cnn.hpp"
#include "normnet/models/mlp.hpp"
#include "normnet/models/row_lstm.hpp"
#include "normnet/models/vision_transformer.hpp"
