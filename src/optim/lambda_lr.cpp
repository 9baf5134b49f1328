// LambdaLR, as torch.optim.lr_scheduler.LambdaLR (1.13): lr = base_lr * lr_lambda(last_epoch).
#include "normnet/optim.hpp"

namespace normnet {
namespace {

Optimizer& checked(Optimizer& optimizer, const std::vector<std::function<double(int64_t)>>& lambdas) {
    NORMNET_CHECK(lambdas.size() == optimizer.num_param_groups(), "LambdaLR: expected ", optimizer.num_param_groups(),
                  " lr_lambdas (one per parameter group), got ", lambdas.size());
    for (size_t g = 0; g < lambdas.size(); ++g) {
        NORMNET_CHECK(static_cast<bool>(lambdas[g]), "LambdaLR: lr_lambda ", g, " is empty");
    }
    return optimizer;
}

}  // namespace

LambdaLR::LambdaLR(Optimizer& optimizer, std::function<double(int64_t)> lr_lambda)
    : LambdaLR(optimizer, std::vector<std::function<double(int64_t)>>(optimizer.num_param_groups(), lr_lambda)) {}

LambdaLR::LambdaLR(Optimizer& optimizer, std::vector<std::function<double(int64_t)>> lr_lambdas)
    : LRSchedulerBase(checked(optimizer, lr_lambdas)), lr_lambdas_(std::move(lr_lambdas)) {
    initial_step();
}

double LambdaLR::get_lr(size_t group) { return base_lrs_[group] * lr_lambdas_[group](last_epoch_); }

}  // namespace normnet
