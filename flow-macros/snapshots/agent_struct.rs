/// Looks orders up.
pub struct Lookup {
    endpoint: String,
}
const _: () = {
    use ::agentweave::__private as __agentflow;
    #[automatically_derived]
    impl __agentflow::AgentSpec for Lookup {
        const NAME: &'static str = "lookup";
        const DESCRIPTION: &'static str = "Looks orders up.";
        const TRANSFERS: &'static [&'static str] = &[];
        const NO_PARENT: bool = false;
    }
    #[automatically_derived]
    impl __agentflow::AgentTargets for Lookup {
        type Targets = __agentflow::NoTarget;
        type Accepts = __agentflow::NoPayload;
    }
    const _: () = {
        use ::agentweave::__private as __agentflow;
        const fn __agentflow_is_agent<T: ?::core::marker::Sized + __agentflow::Agent>() {}
        __agentflow_is_agent::<Lookup>()
    };
};
impl Lookup {
    #[allow(clippy::unused_async)]
    async fn run(&self, cx: &AgentContext) {}
}
const _: () = {
    use ::agentweave::__private as __agentflow;
    #[automatically_derived]
    impl __agentflow::AgentBody for Lookup {
        fn run_body(
            self: __agentflow::Arc<Self>,
            __agentflow_run: __agentflow::RunContext,
            __agentflow_input: __agentflow::AgentInput,
            __agentflow_resume: __agentflow::ResumeInfo,
        ) -> __agentflow::EventStream {
            __agentflow::generate(
                __agentflow_run,
                move |__agentflow_cx| async move {
                    let __agentflow_cx = __agentflow::AgentContext::__start::<
                        Self,
                    >(__agentflow_cx, __agentflow_resume);
                    let __agentflow_outcome = Self::run(&*self, &__agentflow_cx).await;
                    <_ as __agentflow::IntoOutcome<
                        Self,
                    >>::into_outcome(__agentflow_outcome, &__agentflow_cx)
                },
            )
        }
    }
};
