//! # gpumodel-train — fitting power models
//!
//! Owns training: the 10-4-4-1 sigmoid back-propagation neural network (burn, autodiff), the MLR and MLR+
//! baselines (linfa-linear), cross-validation (random k-fold as in the paper, grouped k-fold that leaves
//! whole kernels out, held-out test sets) and the accuracy metrics. Its output is a
//! [`gpumodel_models::artifact::ModelArtifact`]: plain JSON that `gpumodel-models` evaluates without burn.
