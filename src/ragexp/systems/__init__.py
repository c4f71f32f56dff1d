"""The system under test: its interface (`interface`), the reply shapes it may return
(`shapes`), and the built-in kinds that need no plugin layer above them (`python`, `http`,
`answers`; ragexp's own pipeline is `ragexp.plugins.builtin.ragexp_system`)."""

from ragexp.systems.interface import System, SystemAnswer, SystemContext, SystemSpec

__all__ = ["System", "SystemAnswer", "SystemContext", "SystemSpec"]
