/// Decides which desk owns the request.
#[allow(non_camel_case_types)]
pub struct triage;
/**The agents `triage` may transfer to, as declared with `#[agent(transfers = [...])]`.

Return a variant from the agent's body to transfer; `flow!` checks at compile time that each target is a sub-agent or the parent of `triage` in every flow it is placed in. A node of a flow filled by `triage` has it as its target type (`{Flow}{Node}Target` is an alias of it).*/
#[derive(::core::fmt::Debug, ::core::marker::Copy, ::core::cmp::PartialEq)]
#[allow(clippy::enum_variant_names)]
pub enum TriageTransfer {
    ///Transfer to agent `refund`.
    Refund,
    ///Transfer to agent `complaint`.
    Complaint,
}
#[allow(dead_code)]
impl TriageTransfer {
    /// Every target, in declaration order.
    pub const ALL: &'static [Self] = &[
        TriageTransfer::Refund,
        TriageTransfer::Complaint,
    ];
    /// The name of the agent this target transfers to.
    pub const fn as_str(self) -> &'static str {
        match self {
            TriageTransfer::Refund => "refund",
            TriageTransfer::Complaint => "complaint",
        }
    }
}
const _: () = {
    use ::agentweave::__private as __agentflow;
    #[automatically_derived]
    impl ::core::clone::Clone for TriageTransfer {
        #[inline]
        fn clone(&self) -> Self {
            *self
        }
    }
    #[automatically_derived]
    impl ::core::cmp::Eq for TriageTransfer {}
    #[automatically_derived]
    impl ::core::fmt::Display for TriageTransfer {
        fn fmt(&self, __f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
            __f.write_str(self.as_str())
        }
    }
    #[automatically_derived]
    impl __agentflow::TargetTable for TriageTransfer {
        type Agent = triage;
        const ALL: &'static [Self] = TriageTransfer::ALL;
        fn name(self) -> &'static str {
            self.as_str()
        }
    }
    #[automatically_derived]
    impl __agentflow::IntoOutcome<triage> for TriageTransfer {
        fn into_outcome(
            self,
            __cx: &__agentflow::AgentContext,
        ) -> __agentflow::AgentResult {
            __agentflow::transfer(__cx, self)
        }
    }
};
const _: () = {
    use ::agentweave::__private as __agentflow;
    #[automatically_derived]
    impl __agentflow::AgentSpec for triage {
        const NAME: &'static str = "triage";
        const DESCRIPTION: &'static str = "Decides which desk owns the request.";
        const TRANSFERS: &'static [&'static str] = &["refund", "complaint"];
        const NO_PARENT: bool = false;
    }
    #[automatically_derived]
    impl __agentflow::AgentTargets for triage {
        type Targets = TriageTransfer;
        type Accepts = __agentflow::NoPayload;
    }
    #[automatically_derived]
    impl __agentflow::FlowBuilt for triage {
        fn instance() -> Self {
            triage
        }
    }
    #[automatically_derived]
    impl __agentflow::AgentBody for triage {
        fn run_body(
            self: __agentflow::Arc<Self>,
            __agentflow_run: __agentflow::RunContext,
            __agentflow_input: __agentflow::AgentInput,
            __agentflow_resume: __agentflow::ResumeInfo,
        ) -> __agentflow::EventStream {
            type __AgentflowOut = AgentResult<TriageTransfer>;
            #[allow(clippy::let_and_return, clippy::let_unit_value)]
            fn triage(
                cx: &AgentContext,
                input: AgentInput,
            ) -> __agentflow::BodyFuture<'_, __AgentflowOut> {
                __agentflow::body_future(
                    __agentflow::PhantomData::<__AgentflowOut>,
                    async move {
                        let __agentflow_out: __AgentflowOut = {
                            Ok(TriageTransfer::Refund)
                        };
                        __agentflow_out
                    },
                )
            }
            __agentflow::run_boxed_input::<
                Self,
                __AgentflowOut,
            >(__agentflow_run, __agentflow_input, __agentflow_resume, triage)
        }
    }
};
