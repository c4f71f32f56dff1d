"""Plugins: the one PluginManager (`manager`), the contract checked as each plugin loads
(`checks`), what ``ragexp plugins`` and ``--help`` show of them (`listing`), and ragexp's own
built-ins (`builtin`), registered through the same hooks as any third party's."""
