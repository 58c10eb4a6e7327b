/// Looks orders up.
pub struct Lookup {
    endpoint: String,
}
const _: () = {
    #[automatically_derived]
    impl ::agentflow::__private::AgentSpec for Lookup {
        const NAME: &'static str = "lookup";
        const DESCRIPTION: &'static str = "Looks orders up.";
        const TRANSFERS: &'static [&'static str] = &[];
        const NO_PARENT: bool = false;
    }
    #[automatically_derived]
    impl ::agentflow::__private::AgentTargets for Lookup {
        type Targets = ::agentflow::__private::NoTarget;
    }
    const _: () = {
        const fn __agentflow_is_agent<
            T: ?::core::marker::Sized + ::agentflow::__private::Agent,
        >() {}
        __agentflow_is_agent::<Lookup>()
    };
};
impl Lookup {
    #[allow(clippy::unused_async)]
    async fn run(&self, cx: &AgentContext) {}
}
const _: () = {
    #[automatically_derived]
    impl ::agentflow::__private::AgentBody for Lookup {
        fn run_body(
            self: ::agentflow::__private::Arc<Self>,
            __agentflow_run: ::agentflow::__private::RunContext,
            __agentflow_input: ::agentflow::__private::AgentInput,
            __agentflow_resume: ::agentflow::__private::ResumeInfo,
        ) -> ::agentflow::__private::EventStream {
            ::agentflow::__private::generate(
                __agentflow_run,
                move |__agentflow_cx| async move {
                    let __agentflow_cx = ::agentflow::__private::AgentContext::__start::<
                        Self,
                    >(__agentflow_cx, __agentflow_resume);
                    let __agentflow_outcome = Self::run(&*self, &__agentflow_cx).await;
                    <_ as ::agentflow::__private::IntoOutcome<
                        Self,
                    >>::into_outcome(__agentflow_outcome, &__agentflow_cx)
                },
            )
        }
    }
};
