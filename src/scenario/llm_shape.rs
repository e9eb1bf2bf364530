//! What an LLM service's declaration means in the model's terms: the dtypes of its weights,
//! KV cache and activations, and each pipeline stage's memory footprint
//! ([`crate::model::serving`] computes them; the service only supplies its figures).

use super::serving::LlmServing;
use crate::model::dtype_bytes;
use crate::model::serving::{Dtypes, Footprint, NVFP4_SCALE_BYTES};

impl LlmServing {
    /// The bytes per element of its weights (fp4 with NVFP4's block scales), KV cache and
    /// activations.
    pub fn dtypes(&self) -> Dtypes {
        let w = dtype_bytes(&self.dtype);
        Dtypes {
            weights: if self.dtype == "fp4" {
                w + NVFP4_SCALE_BYTES
            } else {
                w
            },
            kv: dtype_bytes(&self.kv_dtype),
            activations: w.max(2.0),
        }
    }

    /// Each pipeline stage's footprint (one with pp 1).
    pub fn stage_footprints(&self) -> Vec<Footprint> {
        (0..self.pp)
            .map(|i| {
                Footprint::stage(
                    &self.model,
                    self.tp,
                    self.pp,
                    i,
                    self.dtypes(),
                    self.engine.token_budget,
                    self.engine.max_seqs,
                )
            })
            .collect()
    }

    /// The footprint: with pp > 1, of the stage whose ranks need the most memory for one
    /// longest request (the placement's need).
    pub fn footprint(&self) -> Footprint {
        let tokens = u64::from(self.prompt.max()) + u64::from(self.output.max());
        let k = self.engine.kv_block;
        let mut all = self.stage_footprints();
        let need = |f: &Footprint| f.need(tokens, k);
        let mut best = all.swap_remove(0);
        for f in all {
            if need(&f) > need(&best) {
                best = f;
            }
        }
        best
    }
}
