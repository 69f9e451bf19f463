/** A stable id per component instance, to tie labels, hints and errors to their control. */
import { useRef } from 'preact/hooks';

let idSeq = 0;
export const useId = () => useRef(`f${++idSeq}`).current;
